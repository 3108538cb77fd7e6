"""Hostile bot: writes gigabytes to stdout (attack 9 of tests/fairplay).

When its match starts it prints a `PROBE output: <json>` line and then writes
4 GiB of text to stdout in 1 MiB writes, without pause. The output limit must
stop it, and the organiser's stored log must stay small.
"""

from __future__ import annotations

import json
import random
import sys

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

CHUNK = (b"flood " * 174763)[: 1024 * 1024]


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class OutputFloodBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        probe("output", {"planned_bytes": 4096 * len(CHUNK)})
        out = sys.stdout.buffer
        for _ in range(4096):
            out.write(CHUNK)
        out.flush()
        probe("output-done", {"written_bytes": 4096 * len(CHUNK)})

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
