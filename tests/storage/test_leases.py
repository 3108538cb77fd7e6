"""Leases (fencing tokens) on matches: `mark_running` issues one, and `record_match`
stores a record only under the lease the match still holds. A player taken for dead
(its job put back in the queue, its arena stale, its referee restarted) finds its lease
revoked or replaced: its copy is refused whole (`LeaseLost`) and the copy played under
the valid lease is the match's. On SQLite and PostgreSQL (the `db` fixture); the
frozen worker and arena end to end are in tests/tournament/test_fencing.py and
tests/arena/test_arena_fencing.py."""

from __future__ import annotations

import dataclasses

import pytest

from cfarena.match.record import Fault, FaultKind
from cfarena.server.storage import Database, LeaseLost, StoredMatch

from .helpers import bots, count, plan, result, snapshot
from .test_arena_fleet import _age

STALE_S = 10.0


def _played(mid: str, lease: str, scores: list[int]) -> StoredMatch:
    ranks = [1, 2] if scores[0] <= scores[1] else [2, 1]
    return dataclasses.replace(result(mid, [scores], ranks), lease=lease)


def test_the_copy_played_under_the_current_lease_wins(db: Database) -> None:
    """A worker frozen mid-match loses it to another that starts it again: the frozen
    one's copy (with the faults its freeze caused) is refused, whether it comes before
    or after the other's; the other's is stored and rated once."""
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    frozen = db.mark_running(mid)
    replayed = db.mark_running(mid)  # its job was retried: another worker plays it
    assert frozen != replayed
    faulted = dataclasses.replace(_played(mid, frozen, [90, 0]),
                                  faults=[Fault(0, FaultKind.TIMEOUT, "no answer")])
    before = snapshot(db)
    with pytest.raises(LeaseLost, match="held by another process"):
        db.record_match(faulted)  # first: refused, nothing written
    assert snapshot(db) == before
    assert db.record_match(_played(mid, replayed, [3, 7]))
    after = snapshot(db)
    with pytest.raises(LeaseLost):
        db.record_match(faulted)  # after: refused too
    assert not db.record_match(_played(mid, replayed, [3, 7]))  # its own retry: a no-op
    assert snapshot(db) == after
    detail = db.get_match(mid)
    assert detail is not None and detail.match.status.value == "finished"
    assert [s.total for s in detail.match.seats] == [3, 7] and detail.faults == ()
    assert count(db, "rating_history") == 4  # 2 seats, in its pool and in global


def test_a_revoked_lease_stores_nothing_and_a_fresh_start_plays_it(db: Database) -> None:
    """`retry_stalled` revokes the lease of a stalled worker's match before its job goes
    back to the queue: the stalled worker stores nothing when it wakes, even if no one
    has started the match again yet; the next start gets a lease of its own."""
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    stalled = db.mark_running(mid)
    assert db.revoke_lease(mid)
    assert not db.revoke_lease(mid)  # once
    with pytest.raises(LeaseLost, match="revoked"):
        db.record_match(_played(mid, stalled, [5, 1]))
    assert count(db, "rating_history") == count(db, "game_logs") == 0
    again = db.mark_running(mid)
    assert db.record_match(_played(mid, again, [1, 5]))


def test_a_replay_after_the_referees_own_stall_renews_only_a_lease_still_held(
        db: Database) -> None:
    """A worker whose referee stalled plays the match again from its seed under the
    lease it held (`mark_running(held=...)`). If that lease was revoked, or taken by
    another worker that now plays the match, it is `LeaseLost`: the other worker's
    lease stays, and so does its copy (the replay must not take the match back)."""
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    first = db.mark_running(mid)
    renewed = db.mark_running(mid, held=first)  # still held: the replay plays it
    assert renewed != first
    with pytest.raises(LeaseLost, match="held by another process"):
        db.mark_running(mid, held=first)  # the voided attempt's lease is not the match's
    assert db.revoke_lease(mid)  # put back in the queue: its worker taken for dead
    with pytest.raises(LeaseLost, match="revoked"):
        db.mark_running(mid, held=renewed)
    other = db.mark_running(mid)  # another worker starts it
    with pytest.raises(LeaseLost, match="held by another process"):
        db.mark_running(mid, held=renewed)
    assert db.record_match(_played(mid, other, [2, 6]))  # the other's lease was untouched
    with pytest.raises(LeaseLost, match="finished"):
        db.mark_running(mid, held=other)  # a finished match is never started again


def test_a_match_aborted_unplayed_keeps_no_lease(db: Database) -> None:
    """A match aborted because its job failed for good or its bot test decided
    (`abort_unplayed`) takes its lease with it: a copy still played under it (a worker
    only frozen, or whose start's commit went unacknowledged) is not stored, nor
    played again by a replay after the referee's own stall."""
    a, b = bots(db, "a", "b")
    [mid] = db.schedule_matches(None, [plan("m", [a, b])])
    lease = db.mark_running(mid)
    assert db.abort_unplayed(mid, "aborted: the test decided")
    with pytest.raises(LeaseLost, match="revoked"):
        db.record_match(_played(mid, lease, [5, 1]))
    with pytest.raises(LeaseLost, match="revoked"):
        db.mark_running(mid, held=lease)
    detail = db.get_match(mid)
    assert detail is not None and detail.match.status.value == "aborted"
    assert count(db, "rating_history") == 0


def test_a_restarted_referee_revokes_its_old_leases(db: Database) -> None:
    """`run-tournament` resumed after a kill marks its running matches aborted, and their
    leases go with them (a referee that was only frozen cannot store them); the replay
    under a new lease is stored."""
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"x": 1})
    [mid] = db.schedule_matches(tid, [plan("m", [a, b])])
    old = db.mark_running(mid)
    assert db.abort_running_matches("referee restarted", tid) == 1
    with pytest.raises(LeaseLost):
        db.record_match(_played(mid, old, [5, 1]))
    assert db.record_match(_played(mid, db.mark_running(mid), [1, 5]))


def test_a_stale_arenas_match_stays_aborted_and_unrated(db: Database) -> None:
    """Arena B frozen past the stale limit: A aborts its matches and revokes their
    leases. B wakes: its record is refused, the match stays aborted and unrated, its
    first beat names the matches it lost, and a match A aborted before B started it
    cannot be started (`fresh`)."""
    a, b = bots(db, "a", "b")
    db.arena_started("A", "machineA", "hostA:1", STALE_S, "stopped")
    db.arena_started("B", "machineB", "hostB:1", STALE_S, "stopped")
    for key in ("b1", "b2"):
        assert db.schedule_seated(plan(key, [a, b]), "B", {a: 2, b: 2}) is None
    lease = db.mark_running("b1", fresh=True)
    assert db.arena_beat("B", STALE_S, {"b1": lease}).lost == ()
    _age(db, "B", STALE_S * 2)
    assert sorted(db.arena_beat("A", STALE_S).died) == ["b1", "b2"]
    faulted = dataclasses.replace(_played("b1", lease, [0, 60]), faults=[
        Fault(1, FaultKind.TIMEOUT, "no answer"), Fault(0, FaultKind.DISCONNECT, "gone")])
    before = snapshot(db)
    with pytest.raises(LeaseLost, match="revoked"):
        db.record_match(faulted)
    assert snapshot(db) == before
    detail = db.get_match("b1")
    assert detail is not None and detail.match.status.value == "aborted"
    assert "arena B (hostB:1) died" in str(detail.match.reason)
    assert db.skill_standings("standard/2p") == [] and count(db, "rating_history") == 0
    # B's first beat after waking: it lost b1 (and is live again)
    assert db.arena_beat("B", STALE_S, {"b1": lease}).lost == ("b1",)
    assert [x[0] for x in db.live_arenas(STALE_S)] == ["A", "B"]
    with pytest.raises(LeaseLost, match="aborted elsewhere before it started"):
        db.mark_running("b2", fresh=True)
    assert db.get_match("b2").match.status.value == "aborted"  # type: ignore[union-attr]
