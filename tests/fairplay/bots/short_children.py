"""Hostile bot: burns CPU in children that live less than a watchdog poll, unseen.

When its match starts it starts a helper process (plain Python: forking the
bot's own gRPC process would abort it) that ignores SIGCHLD, so that the
kernel reaps its children and their CPU time reaches no parent, and forks one
child after another, each burning 50 ms of CPU and exiting. The helper reports
the CPU its children have burnt so far on `PROBE burnt: <json>` lines (every
two children); the bot waits (it never answers: the test gives it a long move
time, so only the CPU limit can stop this).
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

BURN_S = 0.05
HELPER = r"""
import json, os, signal, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
burn = float(sys.argv[1])
children = 0
while children < 2000:
    done_r, done_w = os.pipe()
    if os.fork() == 0:
        os.close(done_r)
        end = time.process_time() + burn
        while time.process_time() < end:
            pass
        os._exit(0)
    os.close(done_w)
    os.read(done_r, 1)  # end of file: the child has exited
    os.close(done_r)
    children += 1
    if children % 2 == 0:
        print(f"PROBE burnt: {json.dumps({'children': children, 'seconds': children * burn})}",
              flush=True)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


class ShortChildrenBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        probe("burner", {"child_cpu_s": BURN_S})
        helper = subprocess.Popen([sys.executable, "-c", HELPER, str(BURN_S)],
                                  stdin=subprocess.DEVNULL)
        start = time.monotonic()
        while helper.poll() is None and time.monotonic() - start < 120:
            time.sleep(0.5)

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
