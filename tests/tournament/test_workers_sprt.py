"""A bot test (`cfarena sprt`) on PostgreSQL, played by `cfarena worker` processes: one is
killed mid-test and the same `cfarena sprt` command joins as a local worker; the test
still decides, its verdict is the SPRT's
over the stored results, and nothing past the decision is counted, queued or played.
And the test row decides once when processes count at the same moment, and a worker
whose job's test decides between its look at the verdict and the start of the match
does not play it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.server.sprt.deal_group import group_score
from cfarena.server.sprt.match_results import ScoreKind, log_seated_results
from cfarena.server.sprt.sequential import SprtBounds, Verdict
from cfarena.server.storage import Database, LeaseLost, MatchPlan, ScheduledMatch, open_database
from cfarena.server.storage.models import SprtVerdict
from cfarena.server.storage.sprt_store import GroupPoint
from cfarena.server.tournament import job_queue
from cfarena.server.tournament.config import BotSpec
from cfarena.server.tournament.schedule import group_key, group_of_key
from cfarena.server.tournament.sprt_test import (
    DECIDED,
    SprtConfig,
    advance_queued,
    stored_sprt_config,
)
from cfarena.server.tournament.worker import QueueWorker, WorkerOptions
from tests.cli.helpers import CFARENA, run_json
from tests.harness.postgres import PgCluster, query
from tests.harness.slow_bots import slow_bot
from tests.tournament.test_workers import _err, _out, _start_worker, _stop, _wait

# a big gap, bounds that decide in a few deal groups: 2 matches a group, batches of 2
SPRT = ["smart", "random", "--players", "2", "--rule", "rounds=single", "--elo-model",
        "logistic", "--elo1", "100", "--concurrency", "2", "--seed", "11",
        "--max-matches", "120"]


@pytest.mark.postgres
@pytest.mark.long
def test_two_workers_play_a_bot_test_to_its_verdict_and_stop_there(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    url = pg_cluster.create_database("sprt_workers")
    # smart's moves 30 ms apart (the same moves, the same verdict): a wave of matches
    # lasts long enough for the kill below to find one in play before the test decides
    sprt = [f"smart={slow_bot(tmp_path, 'smart', 0.03)}", *SPRT[1:]]
    queued = run_json("sprt", *sprt, "--queue-only", "--db", url, cwd=tmp_path, in_process=True)
    assert queued["verdict"] == "continue" and queued["queued"] == 4  # one batch
    test_id, tid = queued["test_id"], queued["tournament_id"]

    first = _start_worker(url, tmp_path / "w1", "--concurrency", "2")
    second = _start_worker(url, tmp_path / "w2", "--concurrency", "2")
    procs = [first, second]
    try:
        # kill one while it plays, once some matches are stored
        deadline = time.monotonic() + 90
        while True:
            finished = query(url, "select count(*) from matches where status = 'finished'")
            doing = query(url, "select count(*) from procrastinate_jobs "
                               "where status = 'doing'")
            if finished[0][0] >= 3 and doing[0][0] >= 1:
                break
            assert time.monotonic() < deadline, "the workers never got going"
            assert all(p.poll() is None for p in procs), [_err(p) for p in procs]
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        # the same command without --queue-only resumes it here: one more (local) worker
        (tmp_path / "w3").mkdir()
        late = subprocess.Popen([CFARENA, "sprt", *sprt, "--json", "--db", url],
                                cwd=tmp_path / "w3", text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        procs.append(late)
        _wait([second, late], 240)
    finally:
        _stop(procs)
    for p in (second, late):
        assert p.returncode == 0, _err(p)[-3000:]
    assert "Traceback" not in "".join(_err(p) for p in procs)
    played = json.loads(_out(second))["played"]
    run = json.loads(_out(late))
    assert (run["test_id"], run["verdict"]) == (test_id, "H1")

    with open_database(url) as db:
        info = db.get_sprt_test(test_id)
        assert info is not None and info.decided
        config = stored_sprt_config(info.config)
        points = db.sprt_groups(test_id)
        # the SPRT over the stored results, group by group: it decides where the
        # stored test did, with the same verdict and LLR
        test = config.new_test()
        for g in range(info.groups):
            seated = [log_seated_results(db.get_log(f"T{tid}-{group_key(g, s)}") or {},
                                         config.score)
                      for s in range(config.matches_per_group)]
            assert test.verdict() is Verdict.CONTINUE  # not decided before its last group
            test.add(group_score(seated, config.new.name, config.old.name))
        assert test.verdict().value == info.verdict.value == "H1"
        assert (run["groups"], run["llr"]) == (info.groups, pytest.approx(info.llr))
        assert test.llr == pytest.approx(info.llr) == pytest.approx(points[-1].llr)
        assert [p.group for p in points] == list(range(info.groups))
        # nothing scheduled past the decision's batch; what was not begun is aborted
        matches = db.list_matches(tid, limit=None)
        last_batch = (info.groups - 1) // 2
        assert {group_of_key(m.key)[0] // 2 for m in matches} <= set(range(last_batch + 1))
        for m in matches:
            if group_of_key(m.key)[0] >= info.groups:
                assert m.status.value in ("finished", "aborted")
                if m.status.value == "aborted":
                    assert m.reason == DECIDED
        assert db.get_tournament(tid).status.value == "finished"  # type: ignore[union-attr]
    # no job of the test is left waiting; the killed worker's match was played again
    assert query(url, "select count(*) from procrastinate_jobs "
                      "where status in ('todo', 'doing')") == [(0,)]
    assert played + run["played_now"] >= 1
    listed = run_json("sprt-tests", "--db", url, cwd=tmp_path, in_process=True)
    assert [(t["verdict"], t["state"]) for t in listed] == [("H1", "finished")]  # type: ignore[index]


@pytest.mark.postgres
def test_processes_counting_at_once_decide_and_schedule_once(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create_database("sprt_race")
    rounds, racers = 12, 4
    with open_database(url) as db:
        bot_ids = [db.register_bot(name, digit * 64, "bundled:" + name).bot_id
                   for name, digit in (("a", "1"), ("b", "2"))]
        info = db.create_sprt_test("sprt a vs b", "a", "b", {}, "r" * 64)
        wins = []
        for r in range(rounds):
            barrier = threading.Barrier(racers)
            results: list[bool] = []
            errors: list[BaseException] = []
            decides = r == rounds - 1

            def count(racer: int, r: int = r, barrier: threading.Barrier = barrier,
                      results: list[bool] = results, errors: list[BaseException] = errors,
                      decides: bool = decides) -> None:
                plan = MatchPlan(key=group_key(r + 1, racer), seed=r, rules={"preset":
                                 "standard"}, players=2, seat_bot_ids=bot_ids)
                verdict = SprtVerdict.H1 if decides else SprtVerdict.CONTINUE
                barrier.wait()
                try:
                    results.append(db.count_sprt_groups(
                        info.id, r, [GroupPoint(r, 0.5 + racer / 10, float(r))], 2 * (r + 1),
                        verdict, [] if decides else [plan]))
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=count, args=(i,)) for i in range(racers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors == [] and sorted(results) == [False] * (racers - 1) + [True]
            wins.append(results)
        after = db.get_sprt_test(info.id)
        assert after is not None and (after.groups, after.verdict) == (rounds, SprtVerdict.H1)
        assert [p.group for p in db.sprt_groups(info.id)] == list(range(rounds))
        # each round scheduled the next group once: one racer's match, not four
        assert len(db.list_matches(info.tournament_id, limit=None)) == rounds - 1
        # a decided test counts nothing more
        assert not db.count_sprt_groups(info.id, rounds, [GroupPoint(rounds, 0.5, 0.0)],
                                        2 * rounds + 2, SprtVerdict.CONTINUE)


@pytest.mark.postgres
def test_a_batch_counted_but_never_queued_gets_its_jobs_from_the_next_count(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    """A worker that died between counting a batch (stored) and queueing its jobs: the
    batch's matches have no job. Its own job, played again, finds its match stored and
    counts again (`advance_queued`): every scheduled match without a job gets one."""
    url = pg_cluster.create_database("sprt_lost_jobs")
    queued = run_json("sprt", *SPRT, "--queue-only", "--db", url, cwd=tmp_path, in_process=True)
    assert queued["queued"] == 4
    query(url, "delete from procrastinate_jobs returning id")  # never made it to the queue
    assert query(url, "select count(*) from procrastinate_jobs") == [(0,)]
    with open_database(url) as db:
        info = db.get_sprt_test(queued["test_id"])
        assert info is not None
        config = stored_sprt_config(info.config)
        app = job_queue.new_app(db.engine)

        async def count_again() -> None:
            async with app.open_async():
                await advance_queued(app, db, config, info.id)

        asyncio.run(count_again())
    assert query(url, "select count(*) from procrastinate_jobs where status = 'todo'") == [
        (4,)]


class _DecidedMeanwhile:
    """A worker's player whose match's test is decided by another worker just before it
    starts the match (the start is `mark_running`, as `MatchRoom` does first)."""

    def __init__(self, db: Database, decide: Callable[[], None]) -> None:
        self.phases: dict[str, int] = {}
        self.db = db
        self.decide = decide
        self.started: list[str] = []
        self.store_s = 0.0

    async def enter_phase(self, phase: int) -> None:
        pass

    async def play(self, match: ScheduledMatch) -> None:
        self.decide()
        self.db.mark_running(match.id)
        self.started.append(match.id)  # past this: the match is played after the verdict


@pytest.mark.postgres
def test_a_job_whose_test_decides_before_its_match_starts_is_not_played(
        pg_cluster: PgCluster) -> None:
    """Worker A took a job and saw the test undecided; worker B counts the deciding group
    and aborts what is not begun; A then starts its match: refused, A skips the job
    (acknowledged, not retried) and the match stays aborted "the test decided"."""
    url = pg_cluster.create_database("sprt_late_start")
    with open_database(url) as db:
        a, b = (db.register_bot(name, digit * 64, "bundled:" + name).bot_id
                for name, digit in (("a", "1"), ("b", "2")))
        info = db.create_sprt_test("sprt a vs b", "a", "b", {}, "l" * 64)
        plans = [MatchPlan(key=group_key(g, s), seed=g, rules={"preset": "standard"},
                           players=2, seat_bot_ids=[a, b] if s == 0 else [b, a])
                 for g in range(2) for s in range(2)]
        assert db.count_sprt_groups(info.id, 0, [], 0, SprtVerdict.CONTINUE, plans)
        late = f"T{info.tournament_id}-{group_key(1, 0)}"

        def decide() -> None:  # worker B, between A's look and A's start
            assert db.count_sprt_groups(info.id, 0, [GroupPoint(0, 1.0, 3.0)], 2,
                                        SprtVerdict.H1)
            db.abort_unheld(info.tournament_id, DECIDED)

        worker = QueueWorker(db, WorkerOptions())
        worker.tests[info.tournament_id] = (info.id, SprtConfig(
            BotSpec("a"), BotSpec("b"), (), Rules.preset("standard"), 2, SprtBounds(0, 5),
            ScoreKind.RAW, 100, 7))
        player = _DecidedMeanwhile(db, decide)
        player.phases = {p.key: 0 for p in plans}
        worker.players[info.tournament_id] = player  # type: ignore[assignment]
        asyncio.run(worker._play_job(info.tournament_id, late))
        assert player.started == [] and worker.stats.skipped == 1
        assert worker.stats.played == 0
        detail = db.get_match(late)
        assert detail is not None
        assert (detail.match.status.value, detail.match.reason) == ("aborted", DECIDED)
        with pytest.raises(LeaseLost):  # nor does a retry of its job start it
            db.mark_running(late)
