"""Several arenas on one database: heartbeats, a dead arena's matches aborted once by a
live one, a bot's capacity held across arenas when scheduling. On SQLite and
PostgreSQL (the `db` fixture); the concurrent tests are in test_arena_fleet_race.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, select, update

from cfarena.server.storage import Database
from cfarena.server.storage.arena_fleet import ArenaBeat
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import ArenaRow, Match
from cfarena.server.web.disclosure import deal_revealed

from .helpers import bots, plan, result

STALE_S = 10.0


def _age(db: Database, arena_id: str, seconds: float) -> None:
    """Make arena `arena_id`'s last heartbeat `seconds` old."""
    with db.engine.begin() as conn:
        conn.execute(update(ArenaRow).where(ArenaRow.id == arena_id)
                     .values(heartbeat_at=utc_now() - timedelta(seconds=seconds)))


def _status(db: Database, match_id: str) -> tuple[str, str | None]:
    got = db.get_match(match_id)
    assert got is not None
    return got.match.status.value, got.match.reason


def _arena_of(db: Database, match_id: str) -> str | None:
    with db.engine.connect() as conn:
        return conn.execute(select(Match.arena_id).where(Match.id == match_id)).scalar_one()


def test_matches_are_tagged_and_capacity_holds_across_arenas(db: Database) -> None:
    a, b, c, d = bots(db, "a", "b", "c", "d")
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    db.arena_started("B", "machineB", "hostB:1", STALE_S, "stopped")
    # a has capacity 1: its match on arena B leaves it no slot on A
    assert db.schedule_seated(plan("m1", [a, b]), "B", {a: 1, b: 1}) is None
    assert _arena_of(db, "m1") == "B"
    assert db.schedule_seated(plan("m2", [a, c]), "A", {a: 1, c: 1}) == {a: 1, c: 0}
    assert db.get_match("m2") is None  # nothing written
    # with capacity 2 it is seated on A too; b, c, d see how busy a and b are elsewhere
    assert db.schedule_seated(plan("m2", [a, c]), "A", {a: 2, c: 1}) is None
    db.mark_running("m2")
    assert dict(db.arena_beat("A", STALE_S).busy_elsewhere) == {a: 1, b: 1}
    assert dict(db.arena_beat("B", STALE_S).busy_elsewhere) == {a: 1, c: 1}
    assert db.schedule_seated(plan("m3", [a, d]), "A", {a: 2, d: 1}) == {a: 2, d: 0}
    # a finished (or aborted) match frees its slot
    assert db.record_match(result("m1", [[0, 3]], [1, 2]))
    assert db.schedule_seated(plan("m3", [a, d]), "A", {a: 2, d: 1}) is None
    # a bot holding two seats of one match needs two slots
    assert db.schedule_seated(plan("m4", [b, b]), "B", {b: 1}) == {b: 0}


def test_a_live_arena_aborts_a_dead_arenas_matches_once(db: Database) -> None:
    a, b, c = bots(db, "a", "b", "c")
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    db.arena_started("B", "machineB", "hostB:7", STALE_S, "stopped")
    for key, arena in (("b-running", "B"), ("b-scheduled", "B"), ("b-done", "B"),
                       ("a-running", "A")):
        assert db.schedule_seated(plan(key, [a, b, c]), arena, {a: 9, b: 9, c: 9}) is None
    db.mark_running("b-running")
    db.mark_running("a-running")
    db.mark_running("b-done")
    assert db.record_match(result("b-done", [[1, 2, 3]], [1, 2, 3]))
    # B beat 9 s ago: alive
    _age(db, "B", STALE_S - 1)
    assert db.arena_beat("A", STALE_S).died == ()
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["A", "B"]
    # B is silent longer than the limit: A aborts its unfinished matches, naming it
    _age(db, "B", STALE_S + 1)
    beat = db.arena_beat("A", STALE_S)
    assert sorted(beat.died) == ["b-running", "b-scheduled"] and beat.aborted == ()
    assert _status(db, "b-running") == (
        "aborted", "arena B (hostB:7) died (no heartbeat for 10 s)")
    assert _status(db, "b-done")[0] == "finished"
    assert _status(db, "a-running")[0] == "running"
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["A"]
    # once: the next beat finds nothing, the finished match's ratings are untouched
    games = {x.name: x.games for x in db.skill_standings("standard/3p")}
    assert db.arena_beat("A", STALE_S).died == ()
    assert {x.name: x.games for x in db.skill_standings("standard/3p")} == games == {
        "a": 1, "b": 1, "c": 1}
    # their slots are free again: B's matches no longer count as busy
    assert dict(db.arena_beat("A", STALE_S).busy_elsewhere) == {}


def test_a_silent_arenas_row_says_stopped_until_it_beats_again(db: Database) -> None:
    """A killed arena (no match of its own) is not left "live" in its row: the next
    beat of another arena past the stale limit marks it stopped at its last heartbeat;
    if it was only frozen, its own next beat makes the row live again."""
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    db.arena_started("B", "machineB", "hostB:1", STALE_S, "stopped")
    _age(db, "B", STALE_S - 1)
    db.arena_beat("A", STALE_S)
    assert _stopped(db, "B") is None
    _age(db, "B", STALE_S + 1)
    db.arena_beat("A", STALE_S)
    stopped_at, last_beat = _stopped(db, "B"), _heartbeat(db, "B")
    assert stopped_at is not None and stopped_at == last_beat
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["A"]
    db.arena_beat("B", STALE_S)  # it wakes
    assert _stopped(db, "B") is None
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["A", "B"]


def _stopped(db: Database, arena_id: str) -> object:
    with db.engine.connect() as conn:
        return conn.execute(select(ArenaRow.stopped_at).where(ArenaRow.id == arena_id)).scalar_one()


def _heartbeat(db: Database, arena_id: str) -> object:
    with db.engine.connect() as conn:
        return conn.execute(select(ArenaRow.heartbeat_at).where(ArenaRow.id == arena_id)
                            ).scalar_one()


def test_a_stopped_arena_and_untagged_matches(db: Database) -> None:
    a, b = bots(db, "a", "b")
    db.arena_started("B", "machineB", "hostB:1", STALE_S, "stopped")
    assert db.schedule_seated(plan("b1", [a, b]), "B", {a: 2, b: 2}) is None
    db.mark_running("b1")
    # a match left running by a referee from before arenas had ids, and a tournament's
    db.schedule_matches(None, [plan("old", [a, b], seed=8)])
    db.mark_running("old")
    tid = db.create_tournament("t", {"x": 1})
    (tmatch,) = db.schedule_matches(tid, [plan("t1", [a, b], seed=9)])
    db.mark_running(tmatch)
    # a new arena starting aborts the untagged one, not B's (alive) nor the tournament's
    assert db.arena_started("A", "machineA", "hostA:1", STALE_S, "referee stopped").aborted \
        == ("old",)
    assert _status(db, "old") == ("aborted", "referee stopped")
    assert _status(db, "b1")[0] == "running" and _status(db, tmatch)[0] == "running"
    # B stops cleanly with a match it could not store: A aborts it at its next beat
    db.arena_stopped("B")
    assert db.arena_beat("A", STALE_S).died == ("b1",)
    assert _status(db, tmatch)[0] == "running"
    # an arena that beats again after being declared dead is live again
    db.arena_beat("B", STALE_S)
    assert db.live_arenas(STALE_S) == [("A", "hostA:1"), ("B", "hostB:1")]
    # an arena whose row was deleted (cleaned up by hand) is dead too
    db.arena_started("Z", "machineZ", "hostZ:1", STALE_S, "stopped")
    assert db.schedule_seated(plan("z1", [a, b], seed=10), "Z", {a: 2, b: 2}) is None
    with db.engine.begin() as conn:
        conn.execute(delete(ArenaRow).where(ArenaRow.id == "Z"))
    assert db.arena_beat("A", STALE_S).died == ("z1",)
    assert _status(db, "z1") == ("aborted", "arena Z died (no heartbeat for 10 s)")
    # an arena's first poll may beat before its start registers it: both are upserts
    db.arena_beat("C", STALE_S)
    assert db.arena_started("C", "machineC", "hostC:1", STALE_S, "referee stopped") \
        == ArenaBeat()
    assert ("C", "hostC:1") in db.live_arenas(STALE_S)


def test_a_match_aborted_as_its_arenas_is_not_revealed_while_it_may_play(db: Database
                                                                         ) -> None:
    """An arena cut off from the database longer than the limit is taken for dead; it
    may still be playing its match, so the web page must not show its seed (which would
    give its players every hand). The copy it stores when it is back is refused
    (tests/storage/test_leases.py); a copy without a lease (not played by an arena)
    is recorded and rated once."""
    a, b = bots(db, "a", "b")
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    db.arena_started("B", "machineB", "hostB:1", STALE_S, "stopped")
    assert db.schedule_seated(plan("b1", [a, b]), "B", {a: 1, b: 1}) is None
    db.mark_running("b1")
    _age(db, "B", STALE_S * 2)
    assert db.arena_beat("A", STALE_S).died == ("b1",)
    assert not deal_revealed(db.same_deal("b1"))
    assert db.record_match(result("b1", [[0, 3]], [1, 2]))
    assert deal_revealed(db.same_deal("b1"))
    assert not db.record_match(result("b1", [[0, 3]], [1, 2]))
    assert _status(db, "b1") == ("finished", None)
    assert [x.games for x in db.skill_standings("standard/2p")] == [1, 1]


def test_a_referee_started_again_in_its_place_aborts_its_matches_at_once(db: Database
                                                                        ) -> None:
    """The same machine and address: the arena before is gone (the new one holds the
    port), so its matches are aborted as stopped without waiting for the limit; an
    arena elsewhere on the same port number is not touched."""
    a, b = bots(db, "a", "b")
    db.arena_started("old", "m1", "0.0.0.0:50051", STALE_S, "referee stopped")
    db.arena_started("other", "m2", "0.0.0.0:50051", STALE_S, "referee stopped")
    for key, arena in (("o1", "old"), ("x1", "other")):
        assert db.schedule_seated(plan(key, [a, b]), arena, {a: 2, b: 2}) is None
        db.mark_running(key)
    start = db.arena_started("new", "m1", "0.0.0.0:50051", STALE_S, "referee stopped")
    assert start == ArenaBeat(aborted=("o1",))
    assert _status(db, "o1") == ("aborted", "referee stopped")
    assert _status(db, "x1")[0] == "running"
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["new", "other"]


@pytest.mark.parametrize("bad", [[], [1]])
def test_a_bad_plan_is_refused_before_anything_is_written(db: Database, bad: list[int]) -> None:
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    with pytest.raises(ValueError, match="players but seats"):
        db.schedule_seated(plan("x", bad), "A", {})
