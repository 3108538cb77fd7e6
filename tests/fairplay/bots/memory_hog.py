"""Hostile bot: allocates memory without bound (attack 8 of tests/fairplay).

When its match starts it allocates (and touches) 16 MiB blocks without end,
reporting its total every 64 MiB on `PROBE memory: <json>` lines; on a
MemoryError it holds what it has and waits. The memory limit must stop it.
"""

from __future__ import annotations

import json
import random
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

BLOCK = 16 * 1024 * 1024


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class MemoryHogBot(Bot):
    def __init__(self) -> None:
        self.hoard: list[bytes] = []

    def on_match_start(self, match: MatchInfo) -> None:
        probe("memory", {"allocated_mib": 0})
        try:
            while True:
                self.hoard.append(b"\x01" * BLOCK)
                mib = len(self.hoard) * BLOCK // (1024 * 1024)
                if mib % 64 == 0:
                    probe("memory", {"allocated_mib": mib})
        except MemoryError:
            probe("memory-error", {"allocated_mib": len(self.hoard) * 16})
            time.sleep(600)

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
