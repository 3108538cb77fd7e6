"""Standings, match lists, fit input and rating history computed from recorded matches."""

from __future__ import annotations

import itertools

import pytest

from cfarena.match.record import Fault, FaultKind
from cfarena.server.rating.elo import elo_update
from cfarena.server.storage import (
    Database,
    MatchStatus,
    Standing,
    StoredMatch,
)

from .helpers import bots, plan, result


def _tournament(db: Database) -> tuple[int, list[int], list[str]]:
    """Three 3-player matches (one shared win), a fault, and an aborted match with a fault."""
    a, b, c = bots(db, "a", "b", "c")
    tid = db.create_tournament("t", {"players": 3})
    ids = db.schedule_matches(tid, [plan("g1", [a, b, c]), plan("g2", [b, c, a]),
                                    plan("g3", [c, a, b]), plan("g4", [a, b, c])])
    assert db.record_match(result(ids[0], [[0, 5, 9], [4, 0, 2]], [1, 2, 3]))
    assert db.record_match(result(ids[1], [[3, 3, 0]], [2, 2, 1],
                                  faults=[Fault(1, FaultKind.TIMEOUT, "slow")]))
    assert db.record_match(result(ids[2], [[1, 1, 6], [1, 1, 0]], [1, 1, 3]))
    assert db.record_match(StoredMatch(ids[3], status=MatchStatus.ABORTED, reason="crash",
                                       faults=[Fault(1, FaultKind.DISCONNECT)]))
    return tid, [a, b, c], ids


def _row(table: list[Standing], name: str) -> Standing:
    [row] = [s for s in table if s.name == name]
    return row


def test_standings_numbers(db: Database) -> None:
    tid, (a, b, c), _ = _tournament(db)
    table = db.standings(tid)
    assert [s.name for s in table] == ["a", "c", "b"]  # best Elo first
    assert [(s.matches, s.wins, s.faults) for s in (_row(table, n) for n in "abc")] == [
        (3, 3, 0), (3, 0, 1), (3, 1, 1)]
    assert _row(table, "a").mean_score == pytest.approx(6 / 5)   # (4 + 0 + 2) / 5 rounds
    assert _row(table, "b").mean_score == pytest.approx(14 / 5)  # (5 + 3 + 6) / 5
    assert _row(table, "c").mean_score == pytest.approx(16 / 5)  # (11 + 3 + 2) / 5
    # Elo: first match by hand (K/(n-1) = 16 per pair), then the sequence of updates
    pool = f"tournament/{tid}"  # a tournament's matches are rated in its own pool only
    history = db.rating_history(a, pool)
    assert history[0].elo_before == 1500.0 and history[0].elo_after == pytest.approx(1516.0)
    assert db.rating_history(c, pool)[0].elo_after == pytest.approx(1484.0)
    assert db.rating_history(b, pool)[0].elo_after == pytest.approx(1500.0)
    assert db.rating_history(a) == []  # not in the ladder's "global"
    expected: dict[int, float] = {}
    for match in ([(a, 1), (b, 2), (c, 3)], [(b, 2), (c, 2), (a, 1)], [(c, 1), (a, 1), (b, 3)]):
        expected.update(elo_update(expected, match))
    assert {s.bot_id: s.elo for s in table} == pytest.approx(expected)
    assert {s.bot_id: s.elo for s in db.standings(tid)} == pytest.approx(expected)
    assert db.standings() == []  # the ladder's table: no match outside the tournament
    assert sum(s.elo for s in table) == pytest.approx(4500.0)


def test_standings_by_tournament_and_pool(db: Database) -> None:
    tid, (a, b, _), _ = _tournament(db)
    # a 2-player match outside the tournament: global and its pool only
    [extra] = db.schedule_matches(None, [plan("x1", [b, a])])
    assert db.record_match(result(extra, [[0, 4]], [1, 2]))
    in_tournament = {s.name: s.matches for s in db.standings(tid)}
    overall = {s.name: s.matches for s in db.standings()}
    assert in_tournament == {"a": 3, "b": 3, "c": 3}
    assert overall == {"a": 1, "b": 1}  # the ladder's: only the match outside it
    two = db.standings(pool="standard/2p")
    assert [(s.name, s.matches, s.wins) for s in two] == [("b", 1, 1), ("a", 1, 0)]
    assert [s.elo for s in two] == pytest.approx([1516.0, 1484.0])
    assert db.standings(pool="standard/3p") == []  # the tournament's are in its own pool
    # the tournament's own Elo ignores the extra match; the ladder's has only it
    assert _row(db.standings(tid), "b").elo != _row(db.standings(), "b").elo


def test_list_and_get_matches(db: Database) -> None:
    tid, (a, b, c), ids = _tournament(db)
    [extra] = db.schedule_matches(None, [plan("x1", [a, b])])
    listed = db.list_matches()
    assert [m.id for m in listed] == [extra, *reversed(ids)]  # newest first
    assert [m.id for m in db.list_matches(tournament_id=tid, limit=2)] == [ids[3], ids[2]]
    assert [m.id for m in db.list_matches(bot="c")] == list(reversed(ids))
    assert [m.id for m in db.list_matches(bot=c, status="aborted")] == [ids[3]]
    assert [m.id for m in db.list_matches(status=MatchStatus.SCHEDULED)] == [extra]
    assert db.list_matches(bot="nobody") == []
    first = db.get_match(ids[0])
    assert first is not None
    assert [(s.bot_name, s.total, s.rank) for s in first.match.seats] == [
        ("a", 4, 1), ("b", 5, 2), ("c", 11, 3)]
    assert first.faults == () and first.log_sha256 is None
    second = db.get_match(ids[1])
    assert second is not None
    assert [(f.bot_name, f.kind.value, f.detail) for f in second.faults] == [
        ("c", "timeout", "slow")]
    assert db.get_match("nope") is None and db.get_log("nope") is None


def test_results_for_fit_and_history(db: Database) -> None:
    tid, (a, b, c), _ = _tournament(db)
    assert db.results_for_fit(tid) == [
        [(a, 1), (b, 2), (c, 3)], [(b, 2), (c, 2), (a, 1)], [(c, 1), (a, 1), (b, 3)]]
    assert db.results_for_fit(tid + 1) == []
    for bot in (a, b, c):
        points = db.rating_history(bot, f"tournament/{tid}")
        assert len(points) == 3
        for before, after in itertools.pairwise(points):
            assert after.elo_before == before.elo_after
    assert db.rating_history("a", "standard/3p") == []
    assert db.rating_history("a", "maltese/3p") == []
    assert db.rating_history("nobody") == []
