"""Hostile bot: reports the environment it was given (the environment test of tests/fairplay).

At start and again when its match has begun, it prints the keys of `os.environ`
and of `/proc/self/environ` (what the kernel kept from its exec, which a forked
process inherits from its fork server) and every value of both, except its own
one-time credential (a hash prefix instead): anything of the organiser's that
reached it ends up in its stored output. Then it plays random legal moves.
Run as `python -m cfarena.sdk run env_report.py` (forked) or as a script
`python env_report.py` (a fresh process).
"""

from __future__ import annotations

import hashlib
import json
import os
import random

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True)}", flush=True)


def _shown(key: str, value: str) -> str:
    if key == "CFARENA_TOKEN":
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]
    return value


def report(phase: str) -> None:
    with open("/proc/self/environ", "rb") as f:
        raw = f.read()
    kernel = dict(item.decode(errors="replace").partition("=")[::2]
                  for item in raw.split(b"\0") if item)
    probe("environment", {
        "phase": phase,
        "os_environ": {k: _shown(k, v) for k, v in os.environ.items()},
        "proc_environ": {k: _shown(k, v) for k, v in kernel.items()},
    })


report("start")


class EnvReportBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        report("match")

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)


if __name__ == "__main__":
    from cfarena.sdk.cli import run_main

    raise SystemExit(run_main(EnvReportBot))
