"""Two processes (two arenas) on one PostgreSQL at once: no rating update is lost when
they store matches of the same bots concurrently (the rating rows are locked), and a
bot's capacity holds when both schedule it concurrently (its row is locked)."""

from __future__ import annotations

import itertools
import multiprocessing
import random
import time
from collections import defaultdict
from collections.abc import Callable
from multiprocessing.synchronize import Barrier

import pytest
from sqlalchemy import select

from cfarena.server.storage import MatchPlan, StoredMatch, open_database
from cfarena.server.storage.models import Match, MatchSeat, Rating, RatingHistory, SkillRating
from tests.harness.postgres import PgCluster

from .helpers import STANDARD, bots

PER_PROCESS = 25
PLAYED = 20  # matches of the busy bot each arena plays in the capacity race
_databases = itertools.count()


def _store_matches(url: str, arena: str, bot_ids: list[int], start: Barrier) -> None:
    """Schedule PER_PROCESS matches of the four bots, then store them all at once."""
    db = open_database(url)
    rng = random.Random(arena)
    try:
        db.arena_started(arena, "here", arena, 10.0, "stopped")
        keys = []
        for i in range(PER_PROCESS):
            seats = rng.sample(bot_ids, len(bot_ids))
            plan = MatchPlan(f"{arena}-{i}", i, STANDARD, len(seats), seats,
                             seat_versions=["v1"] * len(seats))
            assert db.schedule_seated(plan, arena, dict.fromkeys(bot_ids, 99)) is None
            db.mark_running(plan.key)
            keys.append(plan.key)
        start.wait(120)  # the other arena and the test are ready too
        for key in keys:
            ranks = rng.sample(range(1, len(bot_ids) + 1), len(bot_ids))
            db.record_match(StoredMatch(key, round_scores=[ranks], totals=ranks, ranks=ranks))
    finally:
        db.close()


def _play_with_capacity(url: str, arena: str, bot_ids: list[int], capacity: int,
                        start: Barrier) -> None:
    """Seat the first bot with one of the others, as fast as it can, until it played
    PLAYED matches: each is held a moment, then stored."""
    db = open_database(url)
    rng = random.Random(arena)
    try:
        db.arena_started(arena, "here", arena, 10.0, "stopped")
        start.wait(120)  # the other arena and the test are ready too
        deadline = time.monotonic() + 40.0
        played = 0
        for i in itertools.count():
            if played == PLAYED or time.monotonic() > deadline:
                break
            seats = [bot_ids[0], rng.choice(bot_ids[1:])]
            plan = MatchPlan(f"{arena}-{i}", i, STANDARD, 2, seats)
            if db.schedule_seated(plan, arena, {seats[0]: capacity, seats[1]: 99}) is not None:
                continue  # at once: the two race for each slot that frees
            db.mark_running(plan.key)
            time.sleep(rng.uniform(0.0, 0.002))
            db.record_match(StoredMatch(plan.key, round_scores=[[0, 1]], totals=[0, 1],
                                        ranks=[1, 2]))
            played += 1
    finally:
        db.close()


def _run_both(target: Callable[..., None], args: tuple[object, ...]) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(3)  # the two arenas, set up, and this test: then they race
    procs = [ctx.Process(target=target, args=(*args[:1], arena, *args[1:], start))
             for arena in ("A", "B")]
    for p in procs:
        p.start()
    try:
        start.wait(120)
        for p in procs:
            p.join(60)
            assert p.exitcode == 0, f"{p.name} exited {p.exitcode}"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()


@pytest.mark.postgres
def test_concurrent_recording_loses_no_rating_update(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create_database(f"race_ratings{next(_databases)}")
    db = open_database(url)
    try:
        ids = bots(db, "a", "b", "c", "d")
        _run_both(_store_matches, (url, ids))
        with db.engine.connect() as conn:
            finished = conn.execute(select(Match.id).where(Match.status == "finished")).all()
            assert len(finished) == 2 * PER_PROCESS
            for pool in ("standard/4p", "global"):
                games = dict(conn.execute(select(Rating.bot_id, Rating.games)
                                          .where(Rating.pool == pool)).all())
                assert games == dict.fromkeys(ids, 2 * PER_PROCESS)
                skill = dict(conn.execute(select(SkillRating.bot_id, SkillRating.games)
                                          .where(SkillRating.pool == pool)).all())
                assert skill == dict.fromkeys(ids, 2 * PER_PROCESS)
                # each update started from the one before it: the Elo history is one chain
                for bot_id in ids:
                    chain = conn.execute(
                        select(RatingHistory.elo_before, RatingHistory.elo_after)
                        .where(RatingHistory.bot_id == bot_id, RatingHistory.pool == pool)
                        .order_by(RatingHistory.id)).all()
                    assert len(chain) == 2 * PER_PROCESS
                    assert chain[0][0] == 1500.0
                    for (_, after), (before, _) in itertools.pairwise(chain):
                        assert before == after
                    elo = conn.execute(select(Rating.elo).where(
                        Rating.bot_id == bot_id, Rating.pool == pool)).scalar_one()
                    assert elo == chain[-1][1]
    finally:
        db.close()


@pytest.mark.postgres
def test_capacity_holds_when_two_arenas_schedule_one_bot_at_once(pg_cluster: PgCluster
                                                                 ) -> None:
    url = pg_cluster.create_database(f"race_capacity{next(_databases)}")
    db = open_database(url)
    capacity = 1
    try:
        ids = bots(db, "busy", "b", "c", "d", "e")
        _run_both(_play_with_capacity, (url, ids, capacity))
        with db.engine.connect() as conn:
            rows = conn.execute(
                select(Match.arena_id, Match.started_at, Match.finished_at)
                .join(MatchSeat, MatchSeat.match_id == Match.id)
                .where(MatchSeat.bot_id == ids[0], Match.status == "finished")).all()
        per_arena: dict[str | None, int] = defaultdict(int)
        events = []
        for arena, started, finished in rows:
            per_arena[arena] += 1
            events += [(started, 1), (finished, -1)]
        # both arenas played it, PLAYED times each, and never more than `capacity` at once
        assert per_arena == {"A": PLAYED, "B": PLAYED}, per_arena
        at_once = peak = 0
        for _when, step in sorted(events, key=lambda e: (e[0], e[1])):
            at_once += step
            peak = max(peak, at_once)
        assert peak == capacity
    finally:
        db.close()
