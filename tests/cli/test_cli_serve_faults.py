"""`cfarena serve` through faults: the database going away, kill -9, a port in use,
SIGTERM with bots connected. Real `cfarena serve` and bot processes, real PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from cfarena.server.storage import (
    MatchInfo,
    MatchPlan,
    MatchStatus,
    StoredMatch,
    hash_token,
    open_database,
)
from tests.harness.ports import busy_port
from tests.harness.postgres import PgCluster
from tests.harness.serve import Arena as ServeArena
from tests.harness.slow_bots import one_begun_within

from .helpers import run_in_process

# 2-player matches of 1-2 s with random bots: long enough to be in play across a fault
LONG_MATCHES = ["--players", "2", "--rule", "set=12", "--rule", "hand_size=25"]
SHORT_MATCHES = ["--players", "2", "--rule", "rounds=2"]


class Arena(ServeArena):
    """The processes of one test (serve and bots), their output in files, all cleaned up."""

    def add_bots(self, *names: str) -> None:
        """Register bots as `cfarena bots add NAME --token secret-NAME` does."""
        with open_database(self.db) as db:
            for name in names:
                db.register_bot(name, hash_token(f"secret-{name}"))

    def start_serve(self, *args: str, name: str = "serve", port: int = 0
                    ) -> tuple[subprocess.Popen[bytes], int]:
        """serve `name`, listening: its process and the port it bound."""
        bound = self.serve(*args, name=name, port=port)
        return self.procs[name], bound.bots

    def bot(self, name: str, port: int, *args: str, target: str = "cfarena.bots.random_bot"
            ) -> subprocess.Popen[bytes]:
        return self.dial_in(f"bot-{name}", target, f"127.0.0.1:{port}", f"secret-{name}",
                            *args)

    def matches(self) -> list[MatchInfo]:
        with open_database(self.db) as db:
            return db.list_matches(limit=None)

    def ratings_per_match(self) -> dict[str, int]:
        with open_database(self.db) as db, db.engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT match_id, count(*) FROM rating_history GROUP BY match_id"))
            return {str(m): int(n) for m, n in rows}


@pytest.fixture
def arena_factory(tmp_path: Path) -> Iterator[Callable[[str], Arena]]:
    made: list[Arena] = []

    def make(db: str) -> Arena:
        made.append(Arena(tmp_path, db))
        return made[-1]

    yield make
    for arena in made:
        arena.close()


def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr


def _sigterm(proc: subprocess.Popen[bytes], timeout: float = 40) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


# ------------------------------------------------------------------ storage


def test_abort_running_matches(db_url: str) -> None:
    with open_database(db_url) as db:
        a = db.register_bot("a", hash_token("secret-a")).bot_id
        b = db.register_bot("b", hash_token("secret-b")).bot_id
        t = db.create_tournament("t", {"x": 1})
        plans = [MatchPlan(f"m{i}", i, {"preset": "standard"}, 2, [a, b]) for i in range(4)]
        db.schedule_matches(None, plans)
        db.schedule_matches(t, plans[:1])
        for key in ("m0", "m1", "m2", f"T{t}-m0"):
            db.mark_running(key)
        db.record_match(StoredMatch("m2", totals=[3, 5], ranks=[1, 2], round_scores=[[3, 5]]))

        assert db.abort_running_matches("referee stopped") == 2
        status = {m.id: (m.status, m.reason) for m in db.list_matches(limit=None)}
        assert status == {
            "m0": (MatchStatus.ABORTED, "referee stopped"),
            "m1": (MatchStatus.ABORTED, "referee stopped"),
            "m2": (MatchStatus.FINISHED, None),
            "m3": (MatchStatus.SCHEDULED, None),
            f"T{t}-m0": (MatchStatus.RUNNING, None),  # another tournament's: untouched
        }
        assert db.abort_running_matches("referee stopped") == 0
        assert db.abort_running_matches("tournament stopped", tournament_id=t) == 1
        info = {m.id: m for m in db.list_matches(limit=None)}
        assert info[f"T{t}-m0"].status is MatchStatus.ABORTED
        assert info[f"T{t}-m0"].reason == "tournament stopped"
        assert info["m0"].finished_at is not None
        # an aborted match can still be recorded (a late result is not refused)
        assert db.record_match(StoredMatch("m0", totals=[1, 2], ranks=[1, 2],
                                           round_scores=[[1, 2]]))


# ------------------------------------------------------------ the database


@pytest.mark.postgres
def test_postgresql_outage_loses_no_match(
    own_pg: PgCluster, arena_factory: Callable[[str], Arena]
) -> None:
    arena = arena_factory(own_pg.create_database("outage"))
    bots = ("r1", "r2", "r3", "r4")
    arena.add_bots(*bots)
    serve, port = arena.start_serve(*LONG_MATCHES, "--concurrency", "2")
    for name in bots:
        arena.bot(name, port, "--retries", "50")
    in_play: set[str] = set()

    def stored_and_in_play() -> bool:
        matches = arena.matches()
        in_play.clear()
        in_play.update(m.id for m in matches if m.status is MatchStatus.RUNNING)
        return bool(in_play) and any(m.status is MatchStatus.FINISHED for m in matches)

    arena.wait("a stored match and one in play", stored_and_in_play, 60)

    own_pg.stop()
    try:
        # the matches in play go on to their end while the database is away
        arena.wait("the matches in play to end", lambda: in_play <= set(arena.finished()),
              30)
        arena.wait("the storage warning", lambda: "storage unavailable" in arena.err(), 30)
        time.sleep(1.0)
        assert serve.poll() is None, arena.err()
    finally:
        own_pg.start()
    arena.wait("storage to recover", lambda: "storage available again" in arena.err(), 60)
    resumed = len(arena.finished())
    arena.wait("a match started after the outage", lambda: len(arena.finished()) > resumed,
          60)

    assert _sigterm(serve) == 0, arena.err()
    stderr = arena.err()
    _no_traceback(stderr)
    assert stderr.count("storage unavailable") == 1, stderr
    assert stderr.count("storage available again") == 1, stderr
    assert "stopped after" in stderr.splitlines()[-1]
    assert not list(arena.dir.glob("cfarena-unsaved-*"))

    logged = arena.finished()
    assert len(logged) == len(set(logged))
    matches = {m.id: m for m in arena.matches()}
    stored_finished = {k for k, m in matches.items() if m.status is MatchStatus.FINISHED}
    # every match whose end was logged is stored as finished (those ended in the outage
    # too), and nothing else finished; none is left running
    assert set(logged) == stored_finished, (logged, matches)
    assert in_play <= stored_finished
    assert all(m.status is not MatchStatus.RUNNING for m in matches.values())
    # ... and rated exactly once: one rating row per seat in its pool and in "global"
    ratings = arena.ratings_per_match()
    assert {k: ratings.get(k) for k in logged} == {k: 4 for k in logged}


@pytest.mark.postgres
def test_stopped_during_an_outage_keeps_the_unsaved_records(
    own_pg: PgCluster, arena_factory: Callable[[str], Arena]
) -> None:
    arena = arena_factory(own_pg.create_database("unsaved"))
    arena.add_bots("u1", "u2")
    serve, port = arena.start_serve(*LONG_MATCHES, "--concurrency", "1",
                                    "--flush-timeout", "2")
    for name in ("u1", "u2"):
        arena.bot(name, port, "--retries", "50")
    # one begun under half a second ago: it cannot end before the database is gone
    arena.wait("a match just begun", lambda: one_begun_within(arena.matches(), 0.5), 60)
    before = len(arena.finished())
    own_pg.stop()
    try:
        arena.wait("a match ending while the database is away",
              lambda: len(arena.finished()) > before, 30)
        # stopped while the database is still away: it cannot flush within its 2 s
        assert _sigterm(serve, 60) == 1, arena.err()
    finally:
        own_pg.start()
    stderr = arena.err()
    _no_traceback(stderr)
    unsaved = list(arena.dir.glob("cfarena-unsaved-*.jsonl"))
    assert len(unsaved) == 1, stderr
    assert f"written to {unsaved[0]}" in stderr
    records = [json.loads(line) for line in unsaved[0].read_text().splitlines()]
    ended = arena.finished()[before:]
    assert set(ended) <= {r["match_id"] for r in records}
    for r in records:
        if r["match_id"] in ended:
            assert r["status"] == "finished" and len(r["totals"]) == 2 and r["log"]
    # and the database indeed does not have them
    matches = {m.id: m for m in arena.matches()}
    assert all(matches[k].status is MatchStatus.RUNNING for k in ended)


# ------------------------------------------------------------------ kill -9


def test_matches_of_a_killed_referee_are_aborted_on_restart(
    tmp_path: Path, arena_factory: Callable[[str], Arena]
) -> None:
    arena = arena_factory(f"sqlite:///{tmp_path / 'arena.db'}")
    arena.add_bots("k1", "k2")
    serve, port = arena.start_serve(*LONG_MATCHES, "--concurrency", "1")
    for name in ("k1", "k2"):
        arena.bot(name, port, "--retries", "50")

    def running() -> bool:
        return any(m.status is MatchStatus.RUNNING for m in arena.matches())

    arena.wait("a match in play", running, 60)
    os.killpg(serve.pid, signal.SIGKILL)
    serve.wait()
    left = {m.id for m in arena.matches() if m.status is MatchStatus.RUNNING}
    assert left
    marked = f"{len(left)} match{'' if len(left) == 1 else 'es'} left running"

    again, _port = arena.start_serve(*SHORT_MATCHES, "--concurrency", "1", name="serve2",
                                      port=port)
    assert f"{marked} by a stopped referee marked aborted" in arena.err("serve2")
    # the bots reconnect to the new referee and play on
    arena.wait("a match on the new referee", lambda: arena.finished("serve2") != [], 60,
               alive=("serve2",))
    assert _sigterm(again) == 0, arena.err("serve2")
    _no_traceback(arena.err("serve2"))
    matches = {m.id: m for m in arena.matches()}
    for key in left:
        assert (matches[key].status, matches[key].reason) == (MatchStatus.ABORTED,
                                                              "referee stopped")
    assert all(m.status is not MatchStatus.RUNNING for m in matches.values())


# ------------------------------------------------------------------ the port


def test_port_in_use_is_one_line(tmp_path: Path, arena_factory: Callable[[str], Arena]) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    arena = arena_factory(db)
    arena.add_bots("p1")
    with busy_port() as port:
        result = run_in_process("serve", "--port", str(port), "--db", db, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: address already in use"], result.stderr
    assert result.stdout == ""


# ---------------------------------------------------------------- SIGTERM


def test_sigterm_stops_serve_and_its_bots_cleanly(
    tmp_path: Path, arena_factory: Callable[[str], Arena]
) -> None:
    arena = arena_factory(f"sqlite:///{tmp_path / 'arena.db'}")
    names = ("s1", "s2")
    arena.add_bots(*names, "w")
    # more tables wanted than the bots can seat: busy bots are never picked
    serve, port = arena.start_serve(*SHORT_MATCHES, "--concurrency", "4")
    bots = [arena.bot(name, port) for name in names]  # default --retries
    waiting = arena.bot("w", port, "--retries", "-1")  # waits for a referee to come back
    arena.wait("four matches", lambda: len(arena.finished()) >= 4, 60)
    assert all(b.poll() is None for b in [*bots, waiting])

    assert _sigterm(serve) == 0, arena.err()
    stderr = arena.err()
    _no_traceback(stderr)
    played = len(arena.finished())
    assert stderr.splitlines()[-1] == f"stopped after {played} matches", stderr
    # the bots are told the referee is shutting down: they exit 0 at once
    started = time.monotonic()
    for name, bot in zip(names, bots, strict=True):
        assert bot.wait(10) == 0, arena.err(f"bot-{name}")
        _no_traceback(arena.err(f"bot-{name}"))
        assert "the referee is shutting down; stopping" in arena.err(f"bot-{name}")
    assert time.monotonic() - started < 5
    # except the one started with --retries -1: it keeps reconnecting until stopped
    time.sleep(1.0)
    assert waiting.poll() is None, arena.err("bot-w")
    assert "the referee is shutting down; retrying" in arena.err("bot-w")
    waiting.send_signal(signal.SIGTERM)
    assert waiting.wait(10) == 0, arena.err("bot-w")
    _no_traceback(arena.err("bot-w"))

    matches = arena.matches()
    assert len(matches) == played
    # nothing stored before its bots were seated: no "not seated" aborts
    assert all(m.status is MatchStatus.FINISHED for m in matches), [
        (m.id, m.status, m.reason) for m in matches]


SLOW_BOT = """
import time

from cfarena.sdk import Bot


class Slow(Bot):
    def choose(self, turn):
        time.sleep(0.3)  # a whole match takes far longer than the 5 s a stop grants
        return turn.legal_moves[0]
"""


def test_sigint_cuts_off_a_long_match_after_5_s_and_stores_it_aborted(
    tmp_path: Path, arena_factory: Callable[[str], Arena]
) -> None:
    arena = arena_factory(f"sqlite:///{tmp_path / 'arena.db'}")
    arena.add_bots("slow", "quick")
    (tmp_path / "slow_bot.py").write_text(SLOW_BOT)
    serve, port = arena.start_serve("--players", "2")
    bots = [arena.bot("slow", port, target=str(tmp_path / "slow_bot.py")),
            arena.bot("quick", port)]
    arena.wait("a match in play", lambda: any(m.status is MatchStatus.RUNNING
                                         for m in arena.matches()), 60)
    started = time.monotonic()
    serve.send_signal(signal.SIGINT)
    assert serve.wait(30) == 0, arena.err()
    assert 5.0 <= time.monotonic() - started < 15
    stderr = arena.err()
    _no_traceback(stderr)
    assert stderr.splitlines()[-1] == "stopped after 0 matches (1 aborted)", stderr
    [match] = arena.matches()
    assert (match.status, match.reason) == (MatchStatus.ABORTED,
                                            "aborted: referee shutting down")
    assert f"match {match.id} aborted: aborted: referee shutting down" in stderr
    # the bot deciding when its match was cut off is told, too, and exits 0
    for name, bot in zip(("slow", "quick"), bots, strict=True):
        assert bot.wait(10) == 0, arena.err(f"bot-{name}")
        _no_traceback(arena.err(f"bot-{name}"))

