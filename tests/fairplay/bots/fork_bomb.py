"""Hostile bot: forks a hundred sleeping children (attack 7 of tests/fairplay).

When its match starts it starts one helper process (plain Python, no gRPC:
forking from the bot's own gRPC process makes gRPC's fork handlers retry
thread creation and abort the bot, which would hide the limit) that starts
100 children which each sleep 1000 s, carrying on after a failed fork. The
helper, whose stdout is the bot's, reports the first failure at once and a
summary after the loop on `PROBE <name>: <json>` lines, then holds its
children. The bot waits for the helper to finish (its first move waits: the
test gives it a long move time), then goes on playing random legal moves (if it is still alive:
reaching the process limit is a fault that stops it).
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
import errno, json, os, subprocess, sys, time
def probe(name, outcome):
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True)}", flush=True)
children, failures = [], {}
for i in range(100):
    if i % 8 == 0:
        probe("fork-progress", {"started": len(children), "failed": failures})
    try:
        children.append(subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL))
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        if not failures:
            probe("fork-failed", {"after": len(children), "error": name})
        failures[name] = failures.get(name, 0) + 1
probe("fork-summary", {"started": len(children), "failed": failures})
os.write(int(sys.argv[1]), b"done")
time.sleep(1000)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class ForkBombBot(Bot):
    def __init__(self) -> None:
        self.helper: subprocess.Popen[bytes] | None = None

    def on_match_start(self, match: MatchInfo) -> None:
        done_r, done_w = os.pipe()
        self.helper = subprocess.Popen([sys.executable, "-c", HELPER, str(done_w)],
                                       stdin=subprocess.DEVNULL, pass_fds=(done_w,))
        os.close(done_w)
        probe("fork-helper", {"pid": self.helper.pid})
        # hold the match until the helper is done (the move time is long), so that the
        # attack is complete while the match runs
        ready, _, _ = select.select([done_r], [], [], 15.0)
        probe("fork-helper-done", {"done": bool(ready)})
        os.close(done_r)

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
