"""Hostile bot: parks data in the kernel, where no process's resident set shows it.

When its match starts it fills pipes (each grown to 1 MiB) and Unix socket pairs
(both directions) that nobody reads, until it runs out of descriptors or the
kernel refuses more; its resident set stays small. It reports what it parked
and its resident set on `PROBE <name>: <json>` lines, holds it all for 10 s
(the memory limit must stop it meanwhile), then plays random legal moves.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import random
import socket
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

F_SETPIPE_SZ = 1031
CHUNK = b"\x01" * 65536


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def rss_mib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def fill(fd: int) -> int:
    """Write to `fd` (non-blocking) until it is full; the bytes written."""
    os.set_blocking(fd, False)
    total = 0
    while True:
        try:
            total += os.write(fd, CHUNK)
        except BlockingIOError:
            return total


class SocketHogBot(Bot):
    def __init__(self) -> None:
        self.held: list[object] = []

    def on_match_start(self, match: MatchInfo) -> None:
        parked, reported, why = 0, 0, None
        try:
            while True:
                if len(self.held) % 2 == 0:
                    r, w = os.pipe()
                    self.held += [r, w]
                    # fails once the user's pipe pages are at their soft limit
                    with contextlib.suppress(OSError):
                        fcntl.fcntl(w, F_SETPIPE_SZ, 1024 * 1024)
                    parked += fill(w)
                else:
                    a, b = socket.socketpair()
                    self.held += [a, b]
                    parked += fill(a.fileno()) + fill(b.fileno())
                if parked - reported >= 16 * 1024 * 1024:
                    reported = parked
                    probe("parked", {"mib": parked >> 20, "rss_mib": rss_mib()})
        except OSError as exc:
            why = errno.errorcode.get(exc.errno or 0, str(exc))
        probe("parked-all", {"mib": parked >> 20, "rss_mib": rss_mib(), "stopped_by": why,
                             "descriptors": len(self.held)})
        time.sleep(10)

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
