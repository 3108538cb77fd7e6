"""record_match: one transaction for result, seats, faults, log and ratings; never twice."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from cfarena.match.record import Fault
from cfarena.server.replay import simulate_log, verify_logs
from cfarena.server.storage import (
    Database,
    FaultKind,
    MatchStatus,
    StorageError,
    StoredMatch,
    canonical_json,
    open_database,
)

from .helpers import bots, count, plan, result, snapshot


def _big_log(size: int = 100_000) -> dict[str, object]:
    rng = random.Random(5)
    events: list[dict[str, object]] = []
    while len(json.dumps(events)) < size:
        events.append({"turn": len(events), "seat": rng.randrange(4), "tile": [rng.randrange(10),
                       rng.randrange(10)], "note": "ünïcødé ♦", "t": rng.random()})
    return {"format": 1, "events": events, "nested": {"a": [None, True, 1.5e-300]}}


def test_a_finished_match_is_stored_whole(db: Database) -> None:
    a, b, c = bots(db, "a", "b", "c")
    [mid] = db.schedule_matches(None, [plan("m1", [a, b, c])])
    db.mark_running(mid)
    log = _big_log()
    faults = [Fault(1, FaultKind.TIMEOUT, "no answer in 1000 ms", turn_id=12),
              Fault(1, FaultKind.ILLEGAL, "played 6|6 on a closed train", turn_id=30)]
    assert db.record_match(result(mid, [[0, 5, 9], [4, 0, 2]], [1, 3, 2], reason="rounds_played",
                                  forfeited=[1], faults=faults, log=log, duration_s=12.5))
    detail = db.get_match(mid)
    assert detail is not None
    m = detail.match
    assert (m.status, m.reason, m.duration_s) == (MatchStatus.FINISHED, "rounds_played", 12.5)
    assert m.started_at is not None and m.finished_at is not None
    assert m.started_at <= m.finished_at
    assert detail.round_scores == [[0, 5, 9], [4, 0, 2]]
    assert [(s.total, s.rank, s.forfeited, s.faults) for s in m.seats] == [
        (4, 1, False, 0), (5, 3, True, 2), (11, 2, False, 0)]
    assert [(f.seat, f.bot_id, f.kind, f.detail, f.turn_id) for f in detail.faults] == [
        (1, b, FaultKind.TIMEOUT, "no answer in 1000 ms", 12),
        (1, b, FaultKind.ILLEGAL, "played 6|6 on a closed train", 30)]
    assert db.get_log(mid) == log
    assert detail.log_sha256 == hashlib.sha256(canonical_json(log).encode()).hexdigest()
    # rated in its pool and in "global"; history rows for every bot in both
    assert count(db, "ratings") == 6
    assert count(db, "rating_history") == 6
    assert len(db.rating_history("a", "standard/3p")) == 1


def test_recording_twice_is_a_no_op(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(result(mid, [[0, 7]], [1, 2], faults=[Fault(0, FaultKind.PROTOCOL)]))
    before = snapshot(db)
    # the same result again, or a different one: nothing is written, nothing re-rated
    assert not db.record_match(result(mid, [[0, 7]], [1, 2], faults=[Fault(0, FaultKind.PROTOCOL)]))
    assert not db.record_match(result(mid, [[9, 0]], [2, 1], log={"x": 1}))
    assert not db.record_match(StoredMatch(mid, status=MatchStatus.ABORTED, reason="late"))
    assert snapshot(db) == before
    assert [s.elo for s in db.standings()] == [1516.0, 1484.0]


def test_concurrent_recordings_of_one_match_rate_it_once(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    outcomes: list[bool] = []
    barrier = threading.Barrier(4)

    def record() -> None:
        barrier.wait()
        outcomes.append(db.record_match(result(mid, [[0, 7]], [1, 2])))

    threads = [threading.Thread(target=record) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False, False, False, True]
    assert count(db, "rating_history") == 4  # 2 bots x (pool + global), once


def test_a_constraint_violation_midway_writes_nothing(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [done, mid] = db.schedule_matches(None, [plan("m0", [a, b]), plan("m1", [a, b])])
    assert db.record_match(result(done, [[0, 3]], [1, 2]))
    db.mark_running(mid)
    before = snapshot(db)
    # the match and seat updates succeed, then the fault of a seat that is not at the
    # table violates the faults -> match_seats constraint: all of it is rolled back
    bad = result(mid, [[4, 0]], [2, 1], faults=[Fault(0, FaultKind.TIMEOUT), Fault(5,
                 "illegal")], log={"big": "x" * 1000})
    with pytest.raises(StorageError):
        db.record_match(bad)
    assert snapshot(db) == before
    assert db.get_log(mid) is None
    pending = db.get_match(mid)
    assert pending is not None and pending.match.status == MatchStatus.RUNNING
    # the database is still usable and the match can be recorded properly
    assert db.record_match(result(mid, [[4, 0]], [2, 1]))


def test_a_failure_after_the_rows_are_flushed_writes_nothing(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    before = snapshot(db)
    # NaN is no JSON: the log fails after the match, seats and faults went to the DB
    with pytest.raises(ValueError):
        db.record_match(result(mid, [[4, 0]], [2, 1], faults=[Fault(1, FaultKind.DISCONNECT)],
                               log={"x": float("nan")}))
    assert snapshot(db) == before


def test_an_aborted_match_is_not_rated_and_can_be_replayed(db: Database) -> None:
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"n": 1})
    [mid] = db.schedule_matches(tid, [plan("g0", [a, b])])
    db.mark_running(mid)
    assert db.record_match(StoredMatch(mid, status=MatchStatus.ABORTED, reason="referee stopped",
                                       faults=[Fault(0, FaultKind.DISCONNECT, "EOF")],
                                       log={"attempt": 1}))
    assert count(db, "ratings") == 0
    assert [m.id for m in db.pending_matches(tid)] == [mid]
    detail = db.get_match(mid)
    assert detail is not None and detail.match.reason == "referee stopped"
    assert detail.match.seats[0].faults == 1
    db.mark_running(mid)
    assert db.record_match(result(mid, [[0, 2]], [1, 2], log={"attempt": 2}))
    assert db.get_log(mid) == {"attempt": 2}
    assert db.pending_matches(tid) == []
    # the replay replaced the aborted attempt: its fault is gone with it
    assert [s.faults for s in db.standings(tid)] == [0, 0]
    replayed = db.get_match(mid)
    assert replayed is not None and replayed.faults == ()
    assert [s.faults for s in replayed.match.seats] == [0, 0]


def test_invalid_records_are_refused_before_writing(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    with pytest.raises(ValueError, match="2 seats"):
        db.record_match(result(mid, [[1, 2, 3]], [1, 2, 3]))
    with pytest.raises(ValueError, match="finished or aborted"):
        db.record_match(StoredMatch(mid, status=MatchStatus.RUNNING))
    with pytest.raises(StorageError, match="schedule it first"):
        db.record_match(result("unknown", [[1, 2]], [1, 2]))
    assert count(db, "rating_history") == 0


def test_a_tampered_log_is_detected(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(result(mid, [[0, 1]], [1, 2], log={"moves": [1, 2, 3]}))
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE game_logs SET sha256 = :h"), {"h": "0" * 64})
    with pytest.raises(StorageError, match="corrupt"):
        db.get_log(mid)


def test_a_played_game_log_is_stored_whole_to_its_last_action(db: Database) -> None:
    # a real log (played in-process, with a forfeit) read back action for action:
    # the last action is still there and the log still re-simulates to its result
    log = simulate_log({"preset": "standard"}, 4, 11, timeouts=(3,))
    players = log["players"]
    ids = bots(db, *log["seats"])
    [mid] = db.schedule_matches(None, [plan("played", ids, seed=int(log["seed"]))])
    res = log["result"]
    assert db.record_match(StoredMatch(
        mid, round_scores=res["round_scores"], totals=res["totals"], ranks=res["ranks"],
        forfeited=res["forfeited"], log=log, log_format=log["format"],
        faults=[Fault(f["seat"], FaultKind(f["kind"]), f["detail"], f["turn_id"])
                for f in log["faults"]]))
    stored = db.get_log(mid)
    assert stored is not None
    assert len(log["actions"]) > 100 and players == 4
    assert len(stored["actions"]) == len(log["actions"])
    assert stored["actions"][-1] == log["actions"][-1]
    assert stored == log
    detail = db.get_match(mid)
    assert detail is not None and detail.log_format == log["format"]
    report = verify_logs({log["match_id"]: stored}, {log["match_id"]: detail.log_sha256 or ""})
    assert report.ok, report.lines()


def test_a_played_log_reads_back_whole_from_a_reopened_database(db_url: str) -> None:
    # what a later `cfarena replay`/`verify` run sees: a new Database on the same
    # file (or PostgreSQL database), and the raw row read without SQLAlchemy's model
    log = simulate_log({"preset": "trains", "rounds": 2}, 3, 23, timeouts=(1,))
    last = log["actions"][-1]
    writer = open_database(db_url)
    try:
        ids = bots(writer, *log["seats"])
        [mid] = writer.schedule_matches(None, [plan("reopen", ids, seed=int(log["seed"]))])
        res = log["result"]
        assert writer.record_match(StoredMatch(
            mid, round_scores=res["round_scores"], totals=res["totals"], ranks=res["ranks"],
            forfeited=res["forfeited"], log=log, log_format=log["format"],
            faults=[Fault(f["seat"], FaultKind(f["kind"]), f["detail"], f["turn_id"])
                    for f in log["faults"]]))
    finally:
        writer.close()
    if db_url.startswith("sqlite:///"):
        path = Path(db_url.removeprefix("sqlite:///"))
        assert path.is_file()
        with closing(sqlite3.connect(path)) as conn:
            (raw,) = conn.execute("SELECT log FROM game_logs WHERE match_id = ?", (mid,)).fetchone()
        row = json.loads(raw)
    else:
        reader_engine = create_engine(db_url)  # a fresh engine, not the Database's
        try:
            with reader_engine.connect() as conn:
                row = conn.execute(text("SELECT log FROM game_logs WHERE match_id = :m"),
                                   {"m": mid}).scalar_one()
        finally:
            reader_engine.dispose()
    assert row["actions"][-1] == last and len(row["actions"]) == len(log["actions"])
    reader = open_database(db_url)
    try:
        stored = reader.get_log(mid)
        detail = reader.get_match(mid)
    finally:
        reader.close()
    assert stored == log and stored is not None and stored["actions"][-1] == last
    assert detail is not None
    report = verify_logs({log["match_id"]: stored}, {log["match_id"]: detail.log_sha256 or ""})
    assert report.ok, report.lines()
