"""The ladder's tallies (0010) give what the whole-history queries gave: after a stored
history with finished, aborted, replayed, in-play and to-play ladder matches, faults,
forfeits, bots in several seats, several pools and versions, a tournament beside it,
records stored twice or under a lost lease, and writers recording at once; and a
database of 0009 upgrades to the same leaderboard. On SQLite and PostgreSQL.

The oracles below are the queries the leaderboard ran before the tallies (kept here
as they were), over every row of the history."""

from __future__ import annotations

import itertools
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from cfarena.match.record import Fault as PlayedFault
from cfarena.match.record import FaultKind
from cfarena.server.standings.ladder import leaderboard_rows
from cfarena.server.storage import Database, LeaseLost, MatchPlan
from cfarena.server.storage.connect import downgrade, upgrade
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.ladder_tallies import _count_result
from cfarena.server.storage.models import (
    Bot,
    Fault,
    LadderResultTally,
    Match,
    MatchSeat,
    MatchStatus,
    Rating,
)
from cfarena.server.storage.queries import aware

from .helpers import STANDARD, bots, result

POOLS = ("global", "standard/2p", "standard/3p", "custom/3p", "nowhere")
_SEEN_AT = func.coalesce(Match.finished_at, Match.started_at, Match.created_at)


# -- the whole-history queries (before 0010) -----------------------------------------


def _old_standings(s: Session, pool: str) -> dict[int, tuple[Any, ...]]:
    """bot id -> (matches, wins, points, rounds, forfeits, faults) of the ladder in `pool`."""
    where: list[Any] = [Match.tournament_id.is_(None)]
    if pool != "global":
        where.append(Match.pool == pool)
    won = case((MatchSeat.rank == 1, MatchSeat.match_id), else_=None)
    forfeit = case((MatchSeat.forfeited.is_(True), 1), else_=0)
    stats = {row[0]: tuple(row[1:]) for row in s.execute(
        select(MatchSeat.bot_id, func.count(func.distinct(MatchSeat.match_id)),
               func.count(func.distinct(won)), func.sum(MatchSeat.total),
               func.sum(Match.rounds), func.sum(forfeit))
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == MatchStatus.FINISHED.value, *where)
        .group_by(MatchSeat.bot_id))}
    faults = dict(s.execute(select(Fault.bot_id, func.count())
                            .join(Match, Match.id == Fault.match_id)
                            .where(*where).group_by(Fault.bot_id)).all())
    out = {}
    for bot_id in set(stats) | set(faults):
        matches, wins, points, rounds, forfeits = stats.get(bot_id, (0, 0, None, None, 0))
        out[bot_id] = (int(matches), int(wins), points and int(points), rounds and int(rounds),
                       int(forfeits or 0), int(faults.get(bot_id, 0)))
    return out


def _old_activity(s: Session) -> dict[str, tuple[Any, int | None]]:
    """bot name -> (last seen, its latest fault's id) on the ladder."""
    seen = s.execute(select(Bot.name, func.max(_SEEN_AT))
                     .join(MatchSeat, MatchSeat.bot_id == Bot.id)
                     .join(Match, Match.id == MatchSeat.match_id)
                     .where(Match.tournament_id.is_(None)).group_by(Bot.name))
    latest = dict(s.execute(select(Bot.name, func.max(Fault.id))
                            .join(Bot, Bot.id == Fault.bot_id)
                            .join(Match, Match.id == Fault.match_id)
                            .where(Match.tournament_id.is_(None)).group_by(Bot.name)).all())
    return {name: (aware(at), latest.get(name)) for name, at in seen}


def _old_results(s: Session, pool: str) -> list[tuple[Any, int]]:
    query = (select(MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.bot_version, MatchSeat.rank)
             .join(Match, Match.id == MatchSeat.match_id)
             .where(Match.status == MatchStatus.FINISHED.value, Match.tournament_id.is_(None))
             .order_by(Match.finished_at, Match.id, MatchSeat.seat))
    if pool != "global":
        query = query.where(Match.pool == pool)
    counts: dict[Any, int] = {}
    for _match_id, seats in itertools.groupby(s.execute(query), key=lambda r: r[0]):
        found = tuple(((bot_id, version), int(rank or 0)) for _m, bot_id, version, rank in seats)
        counts[found] = counts.get(found, 0) + 1
    return list(counts.items())


def _old_seat_counts(s: Session, pool: str) -> dict[tuple[int, str], list[int]]:
    query = (select(MatchSeat.bot_id, MatchSeat.bot_version, MatchSeat.seat, func.count())
             .join(Match, Match.id == MatchSeat.match_id)
             .where(Match.status != MatchStatus.ABORTED.value, Match.tournament_id.is_(None))
             .group_by(MatchSeat.bot_id, MatchSeat.bot_version, MatchSeat.seat))
    if pool != "global":
        query = query.where(Match.pool == pool)
    out: dict[tuple[int, str], list[int]] = {}
    for bot_id, version, seat, n in s.execute(query):
        counts = out.setdefault((bot_id, version), [])
        counts.extend([0] * (seat + 1 - len(counts)))
        counts[seat] += n
    return out


# -- what the database gives now --------------------------------------------------


def _ladder(db: Database) -> dict[str, Any]:
    """Everything the leaderboard and the bot pages read of the ladder, per pool."""
    out: dict[str, Any] = {"activity": {
        name: (a.seen_at, None if a.fault is None else a.fault.id)
        for name, a in db.ladder_activity().items()}}
    for pool in POOLS:
        out[f"standings {pool}"] = {
            x.bot_id: (x.matches, x.wins, x.mean_score, x.forfeits, x.faults)
            for x in db.standings(None, pool)}
        out[f"results {pool}"] = db.results_by_version(pool)
        out[f"finished {pool}"] = db.finished_count(pool)
        out[f"seats {pool}"] = {(x.bot_id, x.version): list(x.seats)
                                for x in db.skill_standings(pool) if x.seats}
        out[f"board {pool}"] = leaderboard_rows(db, pool, all_versions=True)
    return out


def _oracle(db: Database) -> dict[str, Any]:
    """`_ladder`'s figures from the whole-history queries."""
    with Session(db.engine) as s:
        out: dict[str, Any] = {"activity": _old_activity(s)}
        for pool in POOLS:
            table = {}
            stats = _old_standings(s, pool)
            rated = set(s.scalars(select(Rating.bot_id).where(Rating.pool == pool)))
            for bot_id in rated | set(stats):
                matches, wins, points, rounds, forfeits, faults = stats.get(
                    bot_id, (0, 0, None, None, 0, 0))
                table[bot_id] = (matches, wins, float(points) / float(rounds) if rounds else None,
                                 forfeits, faults)
            out[f"standings {pool}"] = table
            out[f"results {pool}"] = _old_results(s, pool)
            finished = select(func.count()).select_from(Match).where(
                Match.status == MatchStatus.FINISHED.value, Match.tournament_id.is_(None))
            if pool != "global":
                finished = finished.where(Match.pool == pool)
            out[f"finished {pool}"] = s.scalar(finished)
            out[f"seats {pool}"] = _old_seat_counts(s, pool)
    return out


def _compare(db: Database) -> dict[str, Any]:
    """Assert the tallies' figures are the whole history's; the figures."""
    now = _ladder(db)
    expected = _oracle(db)
    for key, value in expected.items():
        assert now[key] == value, key
    return now


# -- a history ----------------------------------------------------------------------


def _plan(key: str, seats: list[int], versions: list[str], rules: dict[str, Any],
          seed: int) -> MatchPlan:
    return MatchPlan(key=key, seed=seed, rules=rules, players=len(seats), seat_bot_ids=seats,
                     seat_versions=versions)


def _played(rng: random.Random, match_id: str, players: int, lease: str | None,
            faulty: bool = False, **extra: Any) -> Any:
    rounds = rng.randint(1, 4)
    scores = [[rng.randint(0, 30) for _ in range(players)] for _ in range(rounds)]
    totals = [sum(r[i] for r in scores) for i in range(players)]
    ranks = [1 + sum(t < x for t in totals) for x in totals]
    faults = [PlayedFault(rng.randrange(players), rng.choice(list(FaultKind)), f"fault {i}")
              for i in range(rng.choice([1, 2] if faulty else [0, 0, 0, 1, 2]))]
    forfeited = [i for i in range(players) if rng.random() < 0.1]
    return result(match_id, scores, ranks, lease=lease, faults=faults, forfeited=forfeited,
                  **extra)


def _history(db: Database, seed: int, matches: int = 120) -> None:
    """A seeded ladder history of `matches` matches beside a tournament's (see the
    module docstring)."""
    rng = random.Random(seed)
    ids = bots(db, "ann", "bob", "cat", "dan", "eve")
    start = utc_now() - timedelta(days=1)
    tid = db.create_tournament("t", {"games": 2})
    db.schedule_matches(tid, [_plan("t0", ids[:2], ["", ""], STANDARD, 1)])
    lease = db.mark_running(f"T{tid}-t0")
    assert db.record_match(_played(rng, f"T{tid}-t0", 2, lease))
    for i in range(matches):
        # mostly the same few seatings (a result repeats), a bot may hold two seats
        players = rng.choice([2, 2, 3])
        seats = [rng.choice(ids[:3] if players == 2 else ids) for _ in range(players)]
        versions = [rng.choice(["1", "1", "2"] if players == 2 else ["", "1", "2"])
                    for _ in range(players)]
        rules = rng.choice([STANDARD, STANDARD, {}])
        key = f"m{i}"
        [match_id] = db.schedule_matches(None, [_plan(key, seats, versions, rules, i)])
        fate = rng.random()
        if fate < 0.08:
            continue  # to play
        lease = db.mark_running(match_id)
        if fate < 0.14:
            continue  # in play
        # ended at times not in the order recorded (a record stored late keeps its end)
        ended = start + timedelta(minutes=rng.randint(0, 1000), microseconds=i)
        if fate < 0.22:
            db.abort_unplayed(match_id, "its queue job failed")
            continue
        if fate < 0.34:  # aborted with faults, then played again (some finish)
            assert db.record_match(_played(rng, match_id, players, lease, faulty=True,
                                           finished_at=ended, status=MatchStatus.ABORTED,
                                           reason="a bot left"))
            if rng.random() < 0.3:
                continue
            lease = db.mark_running(match_id)
        record = _played(rng, match_id, players, lease, finished_at=ended)
        assert db.record_match(record)
        assert not db.record_match(record)  # stored twice: counted once
    # a record under a lease lost meanwhile is not stored, nor counted
    [match_id] = db.schedule_matches(None, [_plan("lost", ids[:2], ["", ""], STANDARD, 99)])
    lost = db.mark_running(match_id)
    db.mark_running(match_id)
    with pytest.raises(LeaseLost):
        db.record_match(_played(rng, match_id, 2, lost))


def test_the_tallies_give_what_the_whole_history_gave(db: Database) -> None:
    _history(db, seed=21)
    figures = _compare(db)
    assert any(figures[f"standings {p}"] for p in ("standard/2p", "standard/3p", "custom/3p"))
    assert any(f for _, f in figures["activity"].values())  # faults counted
    assert any(x[3] for x in figures["standings global"].values())  # and forfeits
    assert figures["standings nowhere"] == {} and figures["results nowhere"] == []


def test_writers_recording_at_once_add_up(db: Database) -> None:
    """Matches of the same bots recorded from four threads at once (on PostgreSQL,
    concurrent transactions upserting the same tally rows)."""
    ann, bob, cat = bots(db, "ann", "bob", "cat")
    plans = [_plan(f"m{i}", [[ann, bob, cat][i % 3], [ann, bob, cat][(i + 1) % 3]],
                   ["1", ""], STANDARD, i) for i in range(40)]
    ids = db.schedule_matches(None, plans)
    leases = {m: db.mark_running(m) for m in ids}

    def record(i: int) -> bool:
        return db.record_match(_played(random.Random(i), ids[i], 2, leases[ids[i]]))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(record, range(len(ids))))
    figures = _compare(db)
    assert sum(n for _, n in figures["results global"]) == 40
    assert sum(x[0] for x in figures["standings global"].values()) == 80


def test_a_0009_database_upgrades_to_the_same_leaderboard(db: Database) -> None:
    _history(db, seed=7, matches=60)
    before = _compare(db)
    downgrade(db.engine, "0009")  # a database of 0009: its history, no tallies
    upgrade(db.engine)  # counts it once
    assert _compare(db) == before


def test_a_match_played_again_takes_its_aborted_attempts_faults_out(db: Database) -> None:
    ann, bob = bots(db, "ann", "bob")
    first, again = db.schedule_matches(None, [_plan(k, [ann, bob], ["1", "1"], STANDARD, i)
                                              for i, k in enumerate(("a", "b"))])
    timeout = PlayedFault(1, FaultKind.TIMEOUT, "no answer")
    assert db.record_match(result(first, [[9, 3]], [1, 2], faults=[timeout]))
    lease = db.mark_running(again)
    assert db.record_match(result(again, [], [], lease=lease, status=MatchStatus.ABORTED,
                                  reason="a bot left", faults=[timeout, timeout]))
    assert _compare(db)["standings global"][bob][-1] == 3
    lease = db.mark_running(again)
    assert db.record_match(result(again, [[2, 7]], [2, 1], lease=lease))
    figures = _compare(db)
    assert figures["standings global"][bob][-1] == 1
    fault = db.ladder_activity()["bob"].fault
    assert fault is not None and fault.match_id == first  # its latest fault left


def test_a_result_keeps_the_match_that_finished_first_ties_going_to_the_lower_id(
        db: Database) -> None:
    """The first match of a result is the whole history's first by finishing time, then
    id (`_old_results`' order), whichever order the matches are recorded in: two that
    finished at the same instant keep the lower id, an earlier one wins over both, a
    later one changes nothing; every one is counted."""
    at = utc_now()

    def count(match_id: str, finished_at: Any) -> tuple[int, Any, str]:
        with Session(db.engine) as s, s.begin():
            _count_result(s, [{"pool": "global", "result": "r", "matches": 1,
                               "first_finished_at": finished_at, "first_match_id": match_id}])
        with Session(db.engine) as s:
            row = s.execute(select(LadderResultTally.matches,
                                   LadderResultTally.first_finished_at,
                                   LadderResultTally.first_match_id)).one()
        return int(row[0]), aware(row[1]), str(row[2])

    assert count("m5", at) == (1, at, "m5")
    assert count("m3", at) == (2, at, "m3")  # the same instant: the lower id
    assert count("m4", at) == (3, at, "m3")  # the same instant, a higher id
    earlier = at - timedelta(seconds=1)
    assert count("m9", earlier) == (4, earlier, "m9")  # finished before: first
    assert count("m1", at) == (5, earlier, "m9")  # a lower id, finished later
