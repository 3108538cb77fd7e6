"""Hostile bot: two processes that each stay under the memory limit, together over it.

When its match starts it starts two helper processes (plain Python) that each
allocate and touch 160 MiB and hold it; with `--memory-mb 256` neither is over
the limit alone, both together are. Each helper reports on a `PROBE held:
<json>` line once its memory is touched. The bot waits (10 s at most) for both,
then plays random legal moves: only a limit that counts all of a sandbox's
processes together stops it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

HELPER = r"""
import json, sys, time
held = bytearray(160 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1
print(f"PROBE held: {json.dumps({'helper': int(sys.argv[1]), 'mib': 160})}", flush=True)
time.sleep(600)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class MemoryPairBot(Bot):
    def __init__(self) -> None:
        self.helpers: list[subprocess.Popen[bytes]] = []

    def on_match_start(self, match: MatchInfo) -> None:
        for i in range(2):
            self.helpers.append(subprocess.Popen([sys.executable, "-c", HELPER, str(i)],
                                                 stdin=subprocess.DEVNULL))
        probe("pair", {"helpers": len(self.helpers)})
        time.sleep(10)  # the helpers print when their memory is held

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
