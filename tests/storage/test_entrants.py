"""A tournament's entrants are its own records: one database serves a ladder and any
number of tournaments, and no tournament touches a ladder bot's token, versions or
ratings (0008, which also sorts out a database from before it)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from cfarena.server.storage import Database, StorageError, open_database
from cfarena.server.storage.connect import downgrade, make_engine, upgrade
from cfarena.server.storage.values import MatchPlan

from .helpers import STANDARD, bots, result, snapshot


def _ladder_view(db: Database) -> tuple[object, ...]:
    """Everything the ladder shows of its bots: list, tokens, ladder ratings, tables."""
    return (db.list_bots(), db.active_tokens(), db.skill_standings("global"),
            db.skill_standings("standard/2p"), db.standings(), db.standings(pool="standard/2p"),
            db.rating_history("alice"), db.skill_history("alice", "global"),
            db.bot_versions("alice"), db.results_by_version("global"), db.finished_count("global"))


def _play(db: Database, tournament_id: int | None, seats: list[int], n: int, key: str
          ) -> list[str]:
    plans = [MatchPlan(key=f"{key}{i}", seed=i, rules=STANDARD, players=2,
                       seat_bot_ids=seats, seat_versions=("v1", "v1") if tournament_id is None
                       else ()) for i in range(n)]
    ids = db.schedule_matches(tournament_id, plans)
    for i, match_id in enumerate(ids):
        ranks = [1, 2] if i % 3 else [2, 1]
        assert db.record_match(result(match_id, [[10 * r for r in ranks]], ranks))
    return ids


def test_a_tournament_never_touches_the_ladder(db: Database) -> None:
    alice, bob = bots(db, "alice", "bob")
    _play(db, None, [alice, bob], 5, "ladder")
    before = _ladder_view(db)
    first = db.create_tournament("Final", {"t": 1})
    entrants = db.register_entrants(first, {"alice": "./alice_v1", "bob": "./bob"})
    assert db.register_entrants(first, {"alice": "./other", "bob": "./bob"}) == entrants
    assert not {alice, bob} & set(entrants.values())
    second = db.create_tournament("Final again", {"t": 2})
    again = db.register_entrants(second, {"alice": "./alice_v2", "bob": "./bob"})
    assert not set(again.values()) & {alice, bob, *entrants.values()}
    played = _play(db, first, [entrants["alice"], entrants["bob"]], 4, "g")
    _play(db, second, [again["bob"], again["alice"]], 2, "g")

    assert _ladder_view(db) == before  # tokens, versions, ratings, lists: untouched
    assert [(b.name, b.command) for b in db.list_bots()] == [("alice", None), ("bob", None)]
    assert db.tournament_bots(first) == {v: k for k, v in entrants.items()}
    # each tournament's table and stored ratings come from its own matches only
    table = db.standings(first)
    assert {(r.bot_id, r.matches) for r in table} == {(i, 4) for i in entrants.values()}
    assert {r.bot_id for r in db.standings(second)} == set(again.values())
    pools = {m.pool for m in db.list_matches(first)}
    assert pools == {f"tournament/{first}"}
    rated = db.rating_history(entrants["alice"], f"tournament/{first}")
    assert [p.match_id for p in rated] == played
    assert db.rating_history(entrants["alice"], "global") == []
    assert [m.id for m in db.list_matches(first, "alice")] == played[::-1]
    # a name without a tournament is the ladder bot's: its 5 matches, none of the finals
    assert {m.tournament_id for m in db.list_matches(None, "alice", limit=None)} == {None}
    assert len(db.list_matches(None, "alice", limit=None)) == 5
    assert db.results_for_fit() == db.results_for_fit(pool="standard/2p")  # ladder only
    # the leaderboard of a tournament's own pool lists nobody (`standings --pool`)
    assert db.skill_standings(f"tournament/{first}") == []


def test_a_name_only_a_tournament_used_is_no_ladder_bot(db: Database) -> None:
    tournament = db.create_tournament("t", {})
    db.register_entrants(tournament, {"carol": "./carol"})
    assert db.list_bots() == [] and db.bot_by_name("carol") is None
    with pytest.raises(StorageError, match=rf"no ladder bot named 'carol'; tournament\(s\) "
                                           rf"{tournament} have an entrant"):
        db.bot_versions("carol")
    with pytest.raises(StorageError, match=r"^no bot named 'dave'$"):
        db.revoke_bot("dave")
    carol = db.register_bot("carol", "c" * 64).bot_id  # the ladder may take the name
    assert carol not in db.tournament_bots(tournament)


def _raw(db: Database, sql: str, **params: object) -> list[tuple[object, ...]]:
    with db.engine.begin() as conn:
        rows = conn.execute(text(sql), params)
        return [tuple(r) for r in rows.all()] if rows.returns_rows else []


def _ratings(db: Database) -> list[tuple[object, ...]]:
    """Every stored rating, current and after each match (without row ids)."""
    rows = []
    for columns, table in (("bot_id, pool, elo, games, updated_at", "ratings"),
                           ("bot_id, pool, match_id, elo_before, elo_after, created_at",
                            "rating_history"),
                           ("bot_id, version, pool, mu, sigma, games, updated_at",
                            "skill_ratings"),
                           ("match_id, bot_id, version, pool, mu, sigma", "skill_history")):
        rows += [(table, *map(str, r)) for r in _raw(db, f"SELECT {columns} FROM {table}")]
    return sorted(rows)


def test_0008_gives_each_tournament_its_entrants_and_rebuilds_the_ratings(
        db_url: str) -> None:
    """A database of 0007, where a tournament took over ladder bot alice (ladder and
    tournament matches rated together) and bob played two tournaments, is sorted out:
    alice keeps her id and ladder matches, every tournament gets its entrants, and the
    ratings are what this cfarena would have stored."""
    db = open_database(db_url)
    try:
        alice, bob, carol = bots(db, "alice", "bob", "carol")
        _play(db, None, [alice, carol], 3, "ladder")
        ladder_only = _ratings(db)
        t1, t2 = db.create_tournament("one", {}), db.create_tournament("two", {})
        t1_ids = _play(db, t1, [alice, bob], 3, "g")
        t2_ids = _play(db, t2, [bob, carol], 2, "g")
        downgrade(db.engine, "0007")
        # as 0007 stored them: a tournament's matches in the ladder's pools
        _raw(db, "UPDATE matches SET pool = 'standard/2p'")
    finally:
        db.close()
    engine = make_engine(db_url)
    upgrade(engine)
    engine.dispose()
    db = open_database(db_url)
    try:
        assert [(b.id, b.name) for b in db.list_bots()] == [(alice, "alice"), (carol, "carol")]
        first, second = db.tournament_bots(t1), db.tournament_bots(t2)
        assert sorted(first.values()) == ["alice", "bob"] and bob in first
        assert sorted(second.values()) == ["bob", "carol"] and not {bob, carol} & set(second)
        seats = _raw(db, "SELECT match_id, bot_id FROM match_seats ORDER BY match_id, seat")
        for match_id, bot_id in seats:
            scope = first if match_id in t1_ids else second if match_id in t2_ids else None
            assert (bot_id in scope) if scope is not None else bot_id in (alice, carol)
        after = snapshot(db)
        assert [r for r in _ratings(db) if "tournament/" not in str(r)] == ladder_only
        assert {r[0] for r in _raw(db, "SELECT DISTINCT pool FROM rating_history")} == {
            "standard/2p", "global", f"tournament/{t1}", f"tournament/{t2}"}
        assert [p.match_id for p in db.rating_history(bob, f"tournament/{t1}")] == t1_ids
        with pytest.raises(RuntimeError, match="cannot downgrade below 0008: several bots"):
            downgrade(db.engine, "0007")  # two bots named alice: refused, nothing changed
        assert snapshot(db) == after
    finally:
        db.close()
