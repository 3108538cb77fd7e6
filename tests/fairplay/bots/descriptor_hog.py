"""Hostile bot: opens descriptors until the kernel refuses (files and sockets).

When its match starts it opens, in turn, `/dev/null` and a Unix socket pair until
an open fails or it holds 4096 (connections to the referee's socket are capped by
the referee's gate before any descriptor limit: tests/fairplay/test_flood.py).
It reports how many it held, why it stopped and its RLIMIT_NOFILE on a
`PROBE descriptors: <json>` line, closes them all and plays random legal moves:
hitting its own limit is no fault, and the referee must be unharmed.
"""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import socket

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

MOST = 4096


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def open_one(kind: int) -> list[object]:
    if kind == 0:
        return [open("/dev/null", "rb")]  # held on purpose
    return list(socket.socketpair())


class DescriptorHogBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        before = len(os.listdir("/proc/self/fd")) - 1  # less listdir's own
        held: list[object] = []
        why = None
        try:
            for round_ in range(MOST):
                held += open_one(round_ % 2)
        except OSError as exc:
            why = errno.errorcode.get(exc.errno or 0, str(exc))
        probe("descriptors", {"open_before": before, "held": len(held), "stopped_by": why,
                              "limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]})
        for thing in held:
            thing.close()  # type: ignore[attr-defined]

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
