"""Hostile bot: leaves processes behind (attack 10 of tests/fairplay).

At start, when its match starts and when it ends (racing the referee's kill),
it double-forks a daemon in a new session that ignores SIGTERM/SIGHUP and
sleeps 1000 s; the daemon's command line carries the test's marker (passed as
`--name fairplay-mark-<hex>`: test plumbing only) and this process's nonce,
so the test can find it from outside. It reports on `PROBE <name>: <json>`
lines and plays random legal moves.
"""

from __future__ import annotations

import json
import random
import secrets
import subprocess
import sys

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, MatchResult, Turn

NONCE = secrets.token_hex(8)
# run by a fresh interpreter: fork, setsid, fork again, ignore the polite signals, sleep
DAEMON = """
import os, signal, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.chdir("/")
time.sleep(1000)
"""


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def marker() -> str:
    for i, arg in enumerate(sys.argv):
        text = arg.split("=", 1)[1] if arg.startswith("--name=") else \
            sys.argv[i + 1] if arg == "--name" and i + 1 < len(sys.argv) else ""
        if text.startswith("fairplay-mark-"):
            return text
    raise SystemExit("daemon.py: run with --name fairplay-mark-<hex>")


def spawn(phase: str) -> None:
    try:
        first = subprocess.Popen(
            [sys.executable, "-c", DAEMON, marker(), NONCE, phase],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        code = first.wait(10)
        probe("daemon", {"phase": phase, "nonce": NONCE, "launcher_exit": code})
    except (OSError, subprocess.TimeoutExpired) as exc:
        probe("daemon", {"phase": phase, "nonce": NONCE, "error": repr(exc)})


probe("nonce", NONCE)
spawn("start")


class DaemonBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        spawn("match-start")

    def on_match_end(self, result: MatchResult) -> None:
        spawn("match-end")

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
