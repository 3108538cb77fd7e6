"""The arena's storage: versions per seat, online ratings per (bot, version) rated
once per match, token rotation and revocation, a bot's faults and decision times.
On SQLite and PostgreSQL (the `db` fixture)."""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import text, update

from cfarena.match.record import Fault, FaultKind
from cfarena.server.rating.online import INITIAL_MU, Skill, rate_match
from cfarena.server.storage import Database, MatchPlan, StorageError, hash_token
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import Match

from .helpers import STANDARD, bots, result


def _plan(key: str, seats: list[int], versions: list[str], seed: int = 7) -> MatchPlan:
    return MatchPlan(key=key, seed=seed, rules=STANDARD, players=len(seats), seat_bot_ids=seats,
                     seat_versions=versions)


def test_each_version_is_rated_separately_and_once(db: Database) -> None:
    alice, bob, carol = bots(db, "alice", "bob", "carol")
    db.schedule_matches(None, [_plan("m1", [alice, bob, carol], ["1", "", "x"]),
                               _plan("m2", [bob, alice, carol], ["", "2", "x"], seed=8)])
    # alice 1 wins, bob and carol tie for second
    assert db.record_match(result("m1", [[0, 5, 5]], [1, 2, 2]))
    standing = {(x.name, x.version): x for x in db.skill_standings("standard/3p")}
    expected = rate_match([Skill(), Skill(), Skill()], [1, 2, 2])
    assert standing[("alice", "1")].mu == pytest.approx(expected[0].mu)
    assert standing[("bob", "")].mu == pytest.approx(expected[1].mu)
    assert standing[("carol", "x")].mu == pytest.approx(expected[2].mu)
    assert standing[("bob", "")].mu == pytest.approx(standing[("carol", "x")].mu)  # a tie
    assert standing[("alice", "1")].games == 1
    # alice 2 is scheduled but has no finished match: listed at the prior, 0 games
    assert standing[("alice", "2")].mu == INITIAL_MU and standing[("alice", "2")].games == 0
    assert standing[("alice", "1")].seats == (1,) and standing[("alice", "2")].seats == (0, 1)
    # the global pool is rated too; recording again changes nothing
    assert {x.version for x in db.skill_standings("global") if x.name == "alice"} == {"1", "2"}
    before = db.skill_standings("standard/3p")
    assert not db.record_match(result("m1", [[0, 5, 5]], [1, 2, 2]))
    assert db.skill_standings("standard/3p") == before
    assert db.results_by_version("standard/3p") == [
        ((((alice, "1"), 1), ((bob, ""), 2), ((carol, "x"), 2)), 1)]
    assert [(h.version, h.matches) for h in db.bot_versions("alice")] == [("1", 1), ("2", 1)]


def test_seat_versions_are_checked(db: Database) -> None:
    alice, bob = bots(db, "alice", "bob")
    with pytest.raises(ValueError, match="seat versions"):
        db.schedule_matches(None, [_plan("m", [alice, bob], ["1"])])
    with pytest.raises(ValueError, match="seat versions"):
        db.schedule_matches(None, [_plan("m", [alice, bob], ["1", "v" * 65])])


def test_revoke_and_rotate(db: Database) -> None:
    bots(db, "alice", "bob")
    old = hash_token("token-of-alice")
    assert db.active_tokens() == {old: "alice", hash_token("token-of-bob"): "bob"}
    revoked = db.revoke_bot("alice")
    assert revoked.revoked_at is not None
    assert db.bot_by_token_hash(old) is None
    assert old not in db.active_tokens()
    new = hash_token("a new token for alice")
    rotated = db.rotate_token("alice", new)
    assert rotated.revoked_at is None and rotated.token_changed_at is not None
    assert db.bot_by_token_hash(old) is None
    found = db.bot_by_token_hash(new)
    assert found is not None and found.name == "alice"
    assert db.active_tokens()[new] == "alice"
    with pytest.raises(StorageError, match="no bot named 'nobody'"):
        db.revoke_bot("nobody")


def test_faults_and_decision_times_for_the_owner(db: Database) -> None:
    alice, bob = bots(db, "alice", "bob")
    db.schedule_matches(None, [_plan("m1", [alice, bob], ["1", ""])])
    log = {"actions": [{"seat": 0, "turn_id": 1, "move": "draw", "ms": 3.5},
                       {"seat": 1, "turn_id": 1, "move": "draw", "ms": 90.0},
                       {"seat": 0, "turn_id": 2, "move": "pass", "ms": 1.5},
                       {"seat": 0, "move": "pass"},
                       {"seat": 0, "turn_id": 3, "move": "pass", "ms": None}]}
    stored = replace(result("m1", [[0, 5]], [1, 2]),
                     faults=[Fault(0, FaultKind.TIMEOUT, "no answer within 1000 ms", 3)],
                     log=log)
    assert db.record_match(stored)
    assert db.decision_times("alice") == {"1": [3.5, 1.5]}
    assert db.decision_times("bob") == {"": [90.0]}
    [fault] = db.bot_faults("alice")
    assert (fault.match_id, fault.kind.value, fault.detail, fault.turn_id) == (
        "m1", "timeout", "no answer within 1000 ms", 3)
    assert db.bot_faults("bob") == []


def test_decision_times_read_one_log_at_a_time_and_only_its_actions(db: Database) -> None:
    """A bot's page reads its latest 200 game logs: decoded whole and all at once they
    made serve's memory grow ~1 MB per full-length match (issue 21). Here ten logs of
    ~130 kB each (events and deals fill them, as in a real log) are read with a traced
    peak below the size of one."""
    alice, bob = bots(db, "alice", "bob")
    actions = [{"seat": i % 2, "turn_id": i, "move": "draw", "ms": 1.0} for i in range(200)]
    filler = [{"kind": "play", "text": "x" * 100, "i": i} for i in range(1000)]
    log = {"actions": actions, "events": filler, "deals": filler}
    keys = [f"m{i}" for i in range(10)]
    db.schedule_matches(None, [_plan(k, [alice, bob], ["1", "1"], seed=i)
                               for i, k in enumerate(keys)])
    for key in keys:
        assert db.record_match(replace(result(key, [[0, 5]], [1, 2]), log=log))
    one_log = len(json.dumps(log))
    tracemalloc.start()
    try:
        times = db.decision_times("alice")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert times == {"1": [1.0] * 100 * 10}
    assert peak < one_log, f"peak {peak} bytes reading ten logs of {one_log} bytes"


def test_decision_times_come_from_the_latest_matches_and_decode_no_older_log(
        db: Database) -> None:
    """The latest `matches` by finishing time (not in the order stored), and the logs of
    older matches are not decoded at all. On SQLite, where a log is text, older logs made
    unreadable here do not fail the read: before, the actions of each of the bot's logs
    were taken out as its match came up in the scan (in the order scheduled), then sorted
    by time and the latest kept: a bot page's CPU and its sort's memory grew with the
    bot's history (70 ms at 2,400 matches)."""
    alice, bob = bots(db, "alice", "bob")
    keys = [f"m{i}" for i in range(6)]
    db.schedule_matches(None, [_plan(k, [alice, bob], ["1", "1"], seed=i)
                               for i, k in enumerate(keys)])
    start = utc_now()
    for i, key in reversed(list(enumerate(keys))):  # stored m5 first; m0 finished first
        log = {"actions": [{"seat": 0, "turn_id": 1, "move": "draw", "ms": float(i)},
                           {"seat": 1, "turn_id": 1, "move": "draw", "ms": 10.0 + i}]}
        assert db.record_match(replace(result(key, [[0, 5]], [1, 2]), log=log,
                                       finished_at=start + timedelta(minutes=i)))
    # the latest of all finished without a game log: no slot of the three goes to it
    db.schedule_matches(None, [_plan("nolog", [alice, bob], ["1", "1"], seed=9)])
    assert db.record_match(replace(result("nolog", [[0, 5]], [1, 2]), log=None,
                                   finished_at=start + timedelta(minutes=9)))
    if db.engine.dialect.name == "sqlite":
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE game_logs SET log = '{\"actions\": [' "
                              "WHERE match_id IN ('m0', 'm1', 'm2')"))
    got = {version: sorted(ms) for version, ms in db.decision_times("alice", 3).items()}
    assert got == {"1": [3.0, 4.0, 5.0]}
    got = {version: sorted(ms) for version, ms in db.decision_times("bob", 2).items()}
    assert got == {"1": [14.0, 15.0]}


def test_the_rating_after_each_match_is_kept_with_its_update(db: Database) -> None:
    alice, bob, carol = bots(db, "alice", "bob", "carol")
    db.schedule_matches(None, [_plan("m1", [alice, bob, carol], ["1", "", "x"]),
                               _plan("m2", [bob, alice, carol], ["", "2", "x"], seed=8),
                               _plan("m3", [carol, bob, alice], ["x", "", "2"], seed=9)])
    ranks = {"m1": [1, 2, 2], "m2": [3, 1, 2], "m3": [1, 1, 3]}
    for key, got in ranks.items():
        assert db.record_match(result(key, [[5 * r for r in got]], got))
    # the same updates, replayed here from the prior
    skills: dict[tuple[str, str], Skill] = {}
    expected: list[tuple[str, Skill]] = []
    seating = {"m1": [("alice", "1"), ("bob", ""), ("carol", "x")],
               "m2": [("bob", ""), ("alice", "2"), ("carol", "x")],
               "m3": [("carol", "x"), ("bob", ""), ("alice", "2")]}
    for key, seats in seating.items():
        after = rate_match([skills.get(e, Skill()) for e in seats], ranks[key])
        skills.update(zip(seats, after, strict=True))
        expected += [(v, s) for (name, v), s in zip(seats, after, strict=True) if name == "alice"]
    for pool in ("standard/3p", "global"):
        kept = db.skill_history("alice", pool)
        assert [(n, v) for n, v, _ in kept] == [(1, "1"), (2, "2"), (3, "2")]
        assert [s.mu for _, _, s in kept] == pytest.approx([s.mu for _, s in expected])
        assert [s.sigma for _, _, s in kept] == pytest.approx([s.sigma for _, s in expected])
        assert db.skill_history("alice", pool, last=2) == kept[1:]  # numbered as in all
        assert db.skill_history("alice", pool, last=5) == kept
        # the last point is the rating the ladder shows
        latest = next(x for x in db.skill_standings(pool) if (x.name, x.version) == ("alice", "2"))
        assert kept[-1][2].elo == pytest.approx(latest.elo)
    assert not db.record_match(result("m3", [[5, 5, 15]], [1, 1, 3]))  # once per match
    assert len(db.skill_history("alice", "global")) == 3
    assert db.skill_history("alice", "standard/4p") == []
    assert db.skill_history("nobody", "global") == []
    # the Bradley-Terry check's input: each distinct result once, with its count
    db.schedule_matches(None, [_plan("m4", [alice, bob, carol], ["1", "", "x"], seed=10)])
    assert db.record_match(result("m4", [[5, 10, 10]], [1, 2, 2]))  # as m1 ended
    assert db.results_by_version("global") == [
        ((((alice, "1"), 1), ((bob, ""), 2), ((carol, "x"), 2)), 2),
        ((((bob, ""), 3), ((alice, "2"), 1), ((carol, "x"), 2)), 1),
        ((((carol, "x"), 1), ((bob, ""), 1), ((alice, "2"), 3)), 1)]


def test_a_bot_was_last_seen_when_its_latest_match_ended(db: Database) -> None:
    """The audit's "last seen 42 s before its last match ended": the time shown was
    when the match was scheduled. It is when the match ended (or started, while it
    plays), as the leaderboard's status and the bot page's versions show it."""
    alice, bob = bots(db, "alice", "bob")
    db.schedule_matches(None, [_plan("m1", [alice, bob], ["1", ""])])
    lease = db.mark_running("m1")
    scheduled = utc_now() - timedelta(seconds=60)
    with db.engine.begin() as conn:  # scheduled a minute ago, started 42 s ago
        conn.execute(update(Match).where(Match.id == "m1").values(
            created_at=scheduled, started_at=scheduled + timedelta(seconds=18)))
    playing = db.ladder_activity()
    assert playing["alice"].seen_at == scheduled + timedelta(seconds=18)  # it plays now
    db.record_match(result("m1", [[0, 9]], [1, 2], lease=lease,
                           faults=[Fault(1, FaultKind.TIMEOUT, "no answer")]))
    detail = db.get_match("m1")
    assert detail is not None and detail.match.finished_at is not None
    ended = detail.match.finished_at
    assert ended - scheduled >= timedelta(seconds=60)
    activity = db.ladder_activity()
    assert activity["alice"].seen_at == activity["bob"].seen_at == ended
    [version] = db.bot_versions("alice")
    assert (version.first_at, version.last_at) == (scheduled + timedelta(seconds=18), ended)
    fault = activity["bob"].fault
    assert activity["alice"].fault is None and fault is not None
    assert (fault.kind, fault.match_id, fault.detail) == (FaultKind.TIMEOUT, "m1", "no answer")
