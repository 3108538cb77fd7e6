"""Hostile bot: burns CPU in child processes (attack 12 of tests/fairplay).

When its match starts it starts four children that busy-loop, so that no one
process reaches the per-process RLIMIT_CPU before the sandbox's total does,
and then waits (it never answers: the test gives it a long move timeout, so
only the CPU limit can end this). It reports on `PROBE <name>: <json>` lines.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

SPINNERS = 4


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class CpuSpinnerBot(Bot):
    def __init__(self) -> None:
        self.spinners: list[subprocess.Popen[bytes]] = []

    def on_match_start(self, match: MatchInfo) -> None:
        for _ in range(SPINNERS):
            self.spinners.append(subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL))
        probe("cpu", {"spinners": len(self.spinners)})
        start = time.monotonic()
        while time.monotonic() - start < 120:
            time.sleep(1)
            cpu = 0.0
            for child in self.spinners:
                try:
                    with open(f"/proc/{child.pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
                except OSError:
                    pass
            probe("cpu-used", {"seconds": round(cpu, 1),
                               "alive": sum(c.poll() is None for c in self.spinners)})

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
