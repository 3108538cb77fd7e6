"""Bots (token hashes only), tournaments, idempotent scheduling and the resume queries."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import text

from cfarena.server.storage import (
    BotNameTaken,
    Database,
    MatchPlan,
    MatchStatus,
    StorageError,
    StoredMatch,
    TournamentStatus,
    config_hash,
    hash_token,
)

from .helpers import bots, count, plan, result


def test_bot_token_is_stored_only_as_its_sha256(db: Database) -> None:
    token = "s3cret-token-value"
    bot_id = db.register_bot("alice", hash_token(token), command="python -m alice").bot_id
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM bots")).all()
    assert len(rows) == 1
    assert not any(token in str(value) for value in rows[0])
    found = db.bot_by_token_hash(hashlib.sha256(token.encode()).hexdigest())
    assert found is not None and (found.id, found.name) == (bot_id, "alice")
    assert found.command == "python -m alice"
    with pytest.raises(ValueError, match="sha256"):
        db.register_bot("bob", token)  # a raw token is refused


def test_register_bot_adds_once_and_refuses_a_taken_name(db: Database) -> None:
    first = db.register_bot("alice", hash_token("a"))
    assert first.added
    again = db.register_bot("alice", hash_token("a"), command="./alice")
    assert (again.bot_id, again.added) == (first.bot_id, False)
    with pytest.raises(BotNameTaken, match="'alice' already exists"):
        db.register_bot("alice", hash_token("b"))
    found = db.bot_by_name("alice")
    assert found is not None and (found.id, found.command) == (first.bot_id, "./alice")
    assert found.token_hash == hash_token("a")
    assert db.bot_by_name("bob") is None


def test_registering_again_is_idempotent_and_checks_the_token(db: Database) -> None:
    first = db.register_bot("alice", hash_token("a")).bot_id
    assert db.register_bot("alice", hash_token("a"), command="./alice").bot_id == first
    assert [(b.name, b.command) for b in db.list_bots()] == [("alice", "./alice")]
    with pytest.raises(StorageError, match="different token"):
        db.register_bot("alice", hash_token("impostor"))
    with pytest.raises(StorageError):
        db.register_bot("bob", hash_token("a"))  # one token, one bot
    assert db.bot_by_token_hash(hash_token("nobody")) is None
    assert count(db, "bots") == 1


def test_tournaments_and_resumable_lookup(db: Database) -> None:
    config = {"players": 4, "games": 10, "seed": 1, "bots": ["a", "b"]}
    digest = config_hash(config)
    assert digest == config_hash(dict(reversed(config.items())))  # key order does not matter
    assert db.find_tournament(digest, unfinished_only=True) is None
    tid = db.create_tournament("first", config)
    info = db.get_tournament(tid)
    assert info is not None
    assert (info.config, info.config_hash, info.status) == (config, digest,
                                                             TournamentStatus.RUNNING)
    assert info.finished_at is None
    db.set_tournament_status(tid, TournamentStatus.INTERRUPTED)
    resumable = db.find_tournament(digest, unfinished_only=True)
    assert resumable is not None and resumable.id == tid
    db.set_tournament_status(tid, "finished")
    assert db.find_tournament(digest, unfinished_only=True) is None
    found = db.find_tournament(digest)  # what run-tournament reports when run again
    assert found is not None and found.id == tid
    finished = db.get_tournament(tid)
    assert finished is not None and finished.finished_at is not None
    other = db.create_tournament("second", {**config, "seed": 2})
    assert [t.id for t in db.list_tournaments()] == [tid, other]
    assert db.get_tournament(999) is None
    with pytest.raises(StorageError):
        db.set_tournament_status(999, "running")


def test_schedule_is_idempotent_by_key(db: Database) -> None:
    a, b, c = bots(db, "a", "b", "c")
    tid = db.create_tournament("t", {"x": 1})
    plans = [plan("t0-g0", [a, b, c], seed=1), plan("t0-g1", [b, c, a], seed=2)]
    ids = db.schedule_matches(tid, plans)
    assert ids == [f"T{tid}-t0-g0", f"T{tid}-t0-g1"]
    # again, plus one new: no duplicates, same ids, new one appended in order
    more = [*plans, plan("t0-g2", [c, a, b], seed=3)]
    assert db.schedule_matches(tid, more) == [*ids, f"T{tid}-t0-g2"]
    assert count(db, "matches") == 3
    assert count(db, "match_seats") == 9
    assert [m.key for m in db.pending_matches(tid)] == ["t0-g0", "t0-g1", "t0-g2"]
    with pytest.raises(StorageError, match="differently"):
        db.schedule_matches(tid, [plan("t0-g0", [a, b, c], seed=99)])
    # the same key in another tournament is another match
    other = db.create_tournament("u", {"x": 2})
    assert db.schedule_matches(other, [plans[0]]) == [f"T{other}-t0-g0"]


def test_schedule_validates_plans(db: Database) -> None:
    a, b = bots(db, "a", "b")
    with pytest.raises(ValueError, match="players"):
        db.schedule_matches(None, [MatchPlan("x", 1, {}, players=3, seat_bot_ids=[a, b])])
    with pytest.raises(ValueError, match="64 bits"):
        db.schedule_matches(None, [plan("x", [a, b], seed=2**64)])
    with pytest.raises(StorageError, match="no tournament"):
        db.schedule_matches(12345, [plan("x", [a, b])])
    assert count(db, "matches") == 0


def test_seat_seeds_and_rules_round_trip(db: Database) -> None:
    a, b = bots(db, "a", "b")
    rules = {"preset": "maltese", "rounds": 3, "spokes": "players"}
    big = 2**63 - 1
    [mid] = db.schedule_matches(None, [plan("adhoc-1", [a, b, a], seed=big, rules=rules)])
    assert mid == "adhoc-1"
    detail = db.get_match(mid)
    assert detail is not None
    assert detail.match.seed == big
    assert detail.rules == rules
    assert detail.match.pool == "maltese/3p"
    assert [s.bot_id for s in detail.match.seats] == [a, b, a]


def test_resume_queries(db: Database) -> None:
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"x": 1})
    ids = db.schedule_matches(tid, [plan(f"g{i}", [a, b], seed=i) for i in range(4)])
    db.mark_running(ids[0])
    assert db.record_match(result(ids[0], [[1, 2]], [1, 2]))
    db.mark_running(ids[1])  # left running by a "crash"
    db.mark_running(ids[2])
    assert db.record_match(StoredMatch(ids[2], status=MatchStatus.ABORTED, reason="bot vanished"))
    assert db.finished_keys(tid) == {"g0"}
    pending = db.pending_matches(tid)
    assert [(m.key, m.status) for m in pending] == [
        ("g1", MatchStatus.RUNNING), ("g2", MatchStatus.ABORTED), ("g3", MatchStatus.SCHEDULED)]
    assert [(m.seed, m.seat_bot_ids, m.rules) for m in pending][2] == (3, (a, b),
                                                                        {"preset": "standard"})
    with pytest.raises(StorageError, match="finished"):
        db.mark_running(ids[0])
    with pytest.raises(StorageError, match="unknown"):
        db.mark_running("nope")
