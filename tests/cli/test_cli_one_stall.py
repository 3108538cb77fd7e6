"""A stall costs the match it happened in, nothing more: a capacity-1 bot that stalls
once past its turn limit is charged exactly one timeout, its late answer is ignored with a
notice that says so, and its log shows no error of the stream (no INTERNAL status from a
late write on an ended stream, no reconnection with a spent one-time pass). Real
run-tournament (sandboxed, forked from a fork server) and real serve with a dial-in bot."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

from cfarena.server.storage import hash_token, open_database
from tests.harness.serve import Arena

from .helpers import run_json

TIMEOUT_MS = 800

# in a tournament every match is a fresh process: it stalls where it sits in seat 0
STALLS_IN_SEAT_0 = f"""
import time
from cfarena.sdk import Bot

class Stall(Bot):
    def choose(self, turn):
        if turn.turn_id == 3 and turn.observation.seat == 0:
            time.sleep({2 * TIMEOUT_MS / 1000})
        return 0
"""

# on the ladder one process plays every match: it stalls once, at its third decision
STALLS_ONCE = f"""
import time
from cfarena.sdk import Bot

class Stall(Bot):
    decisions = 0

    def choose(self, turn):
        Stall.decisions += 1
        if Stall.decisions == 3:
            time.sleep({2 * TIMEOUT_MS / 1000})
        return 0
"""

STREAM_ERRORS = ("INTERNAL", "PERMISSION_DENIED", "retrying", "no seat in match")
LATE = "came after its deadline (it had timed out)"


def _faults(db: Path, bot: str) -> list[tuple[str, int | None]]:
    with sqlite3.connect(db, timeout=5) as conn:
        return conn.execute("select f.kind, f.at_turn from faults f join bots b "
                            f"on b.id = f.bot_id where b.name = '{bot}'").fetchall()


def test_one_stall_in_a_tournament_costs_its_match_only(tmp_path: Path) -> None:
    bot = tmp_path / "stall.py"
    bot.write_text(STALLS_IN_SEAT_0)
    data = run_json("run-tournament", "--bot", f"stall=python -m cfarena.sdk run {bot}",
                    "--bot", "greedy", "--players", "2", "--games", "1",
                    "--rule", "rounds=single", "--timeout-ms", str(TIMEOUT_MS), cwd=tmp_path)
    assert data["status"] == "finished" and data["matches"] == 2
    db = tmp_path / "cfarena.db"
    assert _faults(db, "stall") == [("timeout", 3)]
    with open_database(f"sqlite:///{db}") as database:
        logs = [(m.id, log) for m in database.list_matches()
                for log in database.seat_logs(m.id) if "Stall" in log.output]
    assert len(logs) == 2
    stalled = [log for _id, log in logs if LATE in log.output]
    assert len(stalled) == 1
    # the seat's end is the fault that forfeited it, not what the process said after
    assert stalled[0].exit == f"timeout at turn 3: no answer within {TIMEOUT_MS} ms"
    for _id, log in logs:
        assert not [e for e in STREAM_ERRORS if e in log.output], log.output


def test_one_stall_on_the_ladder_costs_its_match_only(tmp_path: Path) -> None:
    db = tmp_path / "cfarena.db"
    with open_database(f"sqlite:///{db}") as store:
        for name in ("stall", "greedy"):
            store.register_bot(name, hash_token(f"secret-{name}"))
    bot = tmp_path / "stall.py"
    bot.write_text(STALLS_ONCE)
    arena = Arena(tmp_path, f"sqlite:///{db}")
    try:
        ports = arena.serve("--players", "2", "--rule", "rounds=single",
                            "--timeout-ms", str(TIMEOUT_MS), "--concurrency", "2")
        for name, module in (("stall", str(bot)), ("greedy", "greedy")):
            arena.dial_in(name, module, f"127.0.0.1:{ports.bots}", f"secret-{name}",
                          "--retries", "0")
        arena.wait("six matches", lambda: len(arena.finished()) >= 6, 90)
        arena.procs["serve"].send_signal(signal.SIGTERM)
        arena.procs["serve"].wait(timeout=60)
    finally:
        arena.close()
    assert _faults(db, "stall") == [("timeout", 3)], arena.err()[-3000:]
    log = arena.err("stall")
    assert LATE in log
    assert not [e for e in STREAM_ERRORS if e in log], log[-3000:]
