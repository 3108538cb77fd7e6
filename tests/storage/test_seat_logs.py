"""Seat logs and "limit" faults: stored with the match, read back whole, replaced on a replay."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from cfarena.match.record import Fault
from cfarena.server.storage import (
    Database,
    FaultKind,
    MatchStatus,
    SeatLog,
    StorageError,
    StoredMatch,
)

from .helpers import bots, count, plan, result, snapshot

# what the referee keeps of a long output: the first 48 KiB, a marker, the last 16 KiB
HEAD = "".join(f"turn {i}: thinking ünïcødé ♦\n" for i in range(2000))[: 48 * 1024]
TAIL = "".join(f"late line {i}\n" for i in range(2000))[-16 * 1024:]
LONG = f"{HEAD}\n[... 5368709120 bytes not kept ...]\n{TAIL}"
LIMIT = "memory limit 512 MiB exceeded"


def _faults(db: Database, mid: str) -> list[tuple[int, FaultKind, str, int | None]]:
    detail = db.get_match(mid)
    assert detail is not None
    return [(f.seat, f.kind, f.detail, f.turn_id) for f in detail.faults]


def test_seat_logs_and_a_limit_fault_are_stored_and_read_back(db: Database) -> None:
    a, b, c = bots(db, "a", "b", "c")
    [mid] = db.schedule_matches(None, [plan("m", [a, b, c])])
    db.mark_running(mid)
    logs = [
        SeatLog(0, "hello\nbye\n", 10, "exited with code 0"),
        SeatLog(2, LONG, 5 * 2**30 + len(HEAD) + len(TAIL), LIMIT),  # > 2**32: a bigint
    ]
    assert db.record_match(result(
        mid, [[0, 5, 9]], [1, 2, 3], forfeited=[2], seat_logs=logs,
        faults=[Fault(2, FaultKind.LIMIT, LIMIT, turn_id=7)]))
    assert db.seat_logs(mid) == logs  # seat 1 printed nothing: no row
    assert _faults(db, mid) == [(2, FaultKind.LIMIT, LIMIT, 7)]
    detail = db.get_match(mid)
    assert detail is not None and [s.faults for s in detail.match.seats] == [0, 0, 1]
    assert {s.name: s.faults for s in db.standings()} == {"a": 0, "b": 0, "c": 1}
    assert db.seat_logs("no such match") == []


def test_limit_is_a_fault_kind_by_its_value_too(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(StoredMatch(mid, status=MatchStatus.ABORTED, reason="stopped",
                                       faults=[Fault(1, "limit", "CPU time limit 60 s "
                                                           "exceeded")]))
    assert _faults(db, mid) == [(1, FaultKind.LIMIT, "CPU time limit 60 s exceeded", 0)]
    assert db.seat_logs(mid) == []


def test_the_faults_table_still_refuses_unknown_kinds(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    with pytest.raises(ValueError, match="bogus"):
        db.record_match(result(mid, [[0, 1]], [1, 2], faults=[Fault(0, "bogus")]))
    # the check constraint itself (0002 rewrote it) admits "limit" and nothing new
    insert = text("INSERT INTO faults (match_id, seat, bot_id, kind, detail, created_at) "
                  "VALUES (:m, 0, :b, :k, '', CURRENT_TIMESTAMP)")
    with db.engine.begin() as conn:
        conn.execute(insert, {"m": mid, "b": a, "k": "limit"})
    with pytest.raises(IntegrityError, match=r"(?i)check"), db.engine.begin() as conn:
        conn.execute(insert, {"m": mid, "b": a, "k": "bogus"})
    assert count(db, "faults") == 1


def test_text_neither_backend_can_store_is_replaced(db: Database) -> None:
    # PostgreSQL text refuses NUL; a lone surrogate (undecodable bytes kept by
    # surrogateescape) encodes on neither: the match is stored all the same
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(result(
        mid, [[0, 1]], [1, 2], faults=[Fault(1, FaultKind.ILLEGAL, "move '\x00'")],
        seat_logs=[SeatLog(1, "a\x00b \udcff c\n", 9, "exited with code 1: \x00")]))
    assert db.seat_logs(mid) == [SeatLog(1, "a\ufffdb ? c\n", 9, "exited with code 1: \ufffd")]
    assert _faults(db, mid) == [(1, FaultKind.ILLEGAL, "move '\ufffd'", 0)]


@pytest.mark.parametrize("logs", [
    [SeatLog(2, "x", 1)],                      # no seat 2 at a 2-seat table
    [SeatLog(-1, "x", 1)],
    [SeatLog(0, "x", 1), SeatLog(0, "y", 1)],  # two logs for one seat
    [SeatLog(1, "x", -1)],
])
def test_invalid_seat_logs_are_refused_before_writing(db: Database, logs: list[SeatLog]
                                                      ) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    before = snapshot(db)
    with pytest.raises(ValueError, match="seat"):
        db.record_match(result(mid, [[0, 1]], [1, 2], seat_logs=logs))
    assert snapshot(db) == before


def test_a_replayed_match_keeps_only_the_last_attempts_rows(db: Database) -> None:
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"n": 1})
    [mid] = db.schedule_matches(tid, [plan("g0", [a, b])])
    db.mark_running(mid)
    assert db.record_match(StoredMatch(
        mid, status=MatchStatus.ABORTED, reason="aborted: referee shutting down",
        faults=[Fault(0, FaultKind.DISCONNECT, "stream ended", 3),
                Fault(1, FaultKind.TIMEOUT, "no answer within 1000 ms", 4)],
        seat_logs=[SeatLog(0, "attempt 1, seat 0\n", 18, "killed by SIGKILL"),
                   SeatLog(1, "attempt 1, seat 1\n", 18, None)],
        log={"attempt": 1}))
    assert count(db, "faults") == 2 and count(db, "seat_logs") == 2
    # resumed: the same match id is played again and finishes
    db.mark_running(mid)
    second_faults = [Fault(1, FaultKind.LIMIT, LIMIT, 9)]
    second_logs = [SeatLog(1, "attempt 2, seat 1\n", 18, LIMIT)]
    assert db.record_match(result(mid, [[0, 4]], [1, 2], forfeited=[1], faults=second_faults,
                                  seat_logs=second_logs, log={"attempt": 2}))
    assert _faults(db, mid) == [(1, FaultKind.LIMIT, LIMIT, 9)]
    assert db.seat_logs(mid) == second_logs
    assert db.get_log(mid) == {"attempt": 2}
    detail = db.get_match(mid)
    assert detail is not None
    assert detail.match.reason is None and detail.match.status is MatchStatus.FINISHED
    assert [(s.faults, s.forfeited) for s in detail.match.seats] == [(0, False), (1, True)]
    assert {s.name: s.faults for s in db.standings(tid)} == {"a": 0, "b": 1}
    assert db.standings() == []  # the ladder's table: no match outside tournaments
    assert (count(db, "faults"), count(db, "seat_logs"), count(db, "game_logs")) == (1, 1, 1)


def test_an_attempt_without_a_log_or_seat_logs_leaves_none_of_the_earlier_one(db: Database
                                                                               ) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(StoredMatch(
        mid, status=MatchStatus.ABORTED, reason="first", log={"attempt": 1},
        faults=[Fault(0, FaultKind.PROTOCOL)], seat_logs=[SeatLog(0, "one\n", 4)]))
    assert db.record_match(StoredMatch(mid, status=MatchStatus.ABORTED, reason="second"))
    assert db.get_log(mid) is None
    assert db.seat_logs(mid) == []
    assert _faults(db, mid) == []
    detail = db.get_match(mid)
    assert detail is not None and detail.match.reason == "second"
    assert [s.faults for s in detail.match.seats] == [0, 0]


def test_a_refused_replay_keeps_the_earlier_attempt(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    assert db.record_match(StoredMatch(
        mid, status=MatchStatus.ABORTED, reason="first", log={"attempt": 1},
        faults=[Fault(0, FaultKind.PROTOCOL)], seat_logs=[SeatLog(0, "one\n", 4)]))
    before = snapshot(db)
    # the earlier rows are deleted first, then a fault of a seat not at the table fails
    with pytest.raises(StorageError):
        db.record_match(result(mid, [[0, 1]], [1, 2], faults=[Fault(7, FaultKind.TIMEOUT)],
                               seat_logs=[SeatLog(1, "two\n", 4)], log={"attempt": 2}))
    assert snapshot(db) == before
    assert db.seat_logs(mid) == [SeatLog(0, "one\n", 4)]
    assert db.get_log(mid) == {"attempt": 1}


def test_a_finished_match_keeps_its_seat_logs_when_recorded_again(db: Database) -> None:
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    logs = [SeatLog(0, "done\n", 5, "exited with code 0")]
    assert db.record_match(result(mid, [[0, 1]], [1, 2], seat_logs=logs))
    assert not db.record_match(result(mid, [[1, 0]], [2, 1], seat_logs=[SeatLog(0, "x", 1)]))
    assert db.seat_logs(mid) == logs


def test_seat_logs_go_with_their_tournament(db: Database) -> None:
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"n": 1})
    [mid] = db.schedule_matches(tid, [plan("g0", [a, b])])
    assert db.record_match(result(mid, [[0, 1]], [1, 2], seat_logs=[SeatLog(1, "x\n", 2)]))
    with db.engine.begin() as conn:
        conn.execute(text("DELETE FROM tournaments WHERE id = :t"), {"t": tid})
    assert db.seat_logs(mid) == []
    assert count(db, "seat_logs") == 0
