"""Hostile bot: floods the referee's socket with connections (tests/fairplay, test_flood).

When its match starts it starts one helper (plain Python, no gRPC) that forks
`FORKS` processes; each opens up to `EACH` connections to the referee's Unix
socket (`/run/cfarena/arena.sock`), sends the HTTP/2 client preface on each and
nothing more, and keeps them all open. Every process reports how far it got on a
`PROBE flood: <json>` line (connections opened, then the first error, or how many
the other end closed). The bot waits for the helper (up to 20 s: a long move
time), then plays random legal moves, if it is still alive.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

HELPER = r"""
import errno, json, os, socket, sys, time
forks, each, done = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
def probe(name, outcome):
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True)}", flush=True)
children = []
for i in range(forks):
    pid = os.fork()
    if pid == 0:
        held, error = [], None
        for n in range(each):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(2.0)
                s.connect("/run/cfarena/arena.sock")
                s.sendall(PREFACE)
                held.append(s)
            except OSError as exc:
                error = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
                try:
                    s.close()
                except Exception:
                    pass
                if error in ("EMFILE", "ENFILE"):
                    break
        closed = 0
        for s in held:
            s.setblocking(False)
            try:
                if s.recv(65536, socket.MSG_PEEK) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        probe("flood", {"process": i, "opened": len(held), "error": error,
                        "closed_by_referee": closed})
        os.write(done, b"x")
        time.sleep(600)
        os._exit(0)
    children.append(pid)
time.sleep(600)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


FORKS = 4  # processes that flood
EACH = 5000  # connections each tries to open: 20,000 in all, the referee's RLIMIT_NOFILE


class FloodBot(Bot):
    def __init__(self) -> None:
        self.forks, self.each = FORKS, EACH
        self.helper: subprocess.Popen[bytes] | None = None

    def on_match_start(self, match: MatchInfo) -> None:
        done_r, done_w = os.pipe()
        self.helper = subprocess.Popen(
            [sys.executable, "-c", HELPER, str(self.forks), str(self.each), str(done_w)],
            stdin=subprocess.DEVNULL, pass_fds=(done_w,))
        os.close(done_w)
        probe("flood-start", {"forks": self.forks, "each": self.each})
        finished = 0
        while finished < self.forks:
            ready, _, _ = select.select([done_r], [], [], 20.0)
            if not ready:
                break
            finished += len(os.read(done_r, 64))
        probe("flood-done", {"processes": finished})
        os.close(done_r)

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)

