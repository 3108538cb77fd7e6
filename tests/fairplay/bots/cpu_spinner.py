"""Hostile bot: burns CPU in child processes (attack 12 of tests/fairplay).

When its match starts it starts four children that busy-loop, so that no one
process reaches the per-process RLIMIT_CPU before the sandbox's total does,
and then waits (it never answers: the test gives it a long move timeout, so
only the CPU limit can end this). With `--name orphans`, it instead keeps
starting short-lived orphans (double-forked, so that the sandbox's init reaps
them) that each burn 50 ms of CPU: each lives less than one poll of the
watchdog. It reports on `PROBE <name>: <json>` lines.
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
ORPHANS = "orphans" in sys.argv
# a double fork: the burner is an orphan by the time it runs, reaped by init
ORPHAN = """
import os, time
if os.fork() == 0:
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
os._exit(0)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class CpuSpinnerBot(Bot):
    def __init__(self) -> None:
        self.spinners: list[subprocess.Popen[bytes]] = []

    def on_match_start(self, match: MatchInfo) -> None:
        if ORPHANS:
            probe("cpu", {"orphans": True})
            start = time.monotonic()
            while time.monotonic() - start < 120:
                subprocess.run([sys.executable, "-c", ORPHAN], stdin=subprocess.DEVNULL,
                               check=False)
            return
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
