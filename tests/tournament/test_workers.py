"""Tournament matches as jobs on PostgreSQL, played by `cfarena worker` processes: one is
killed mid-run and one joins late, and the tournament is still stored exactly once, with
the results a single worker gets; a worker that loses its database writes nothing half."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import (
    CFARENA,
    as_in_a_terminal,
    marker,
    run_in_process,
    run_json,
    wait_no_processes,
)
from tests.harness.postgres import PgCluster, query
from tests.harness.slow_bots import slow_bot, stored_and_one_begun


def _tournament(games: int) -> list[str]:
    """Greedy against smart, 2 rounds, a fixed seed: `games` deals, each played in both
    seat rotations (2 * `games` matches; the first rotations are the first phase)."""
    return ["--bot", "greedy", "--bot", "smart", "--players", "2", "--games", str(games),
            "--rule", "rounds=2", "--seed", "20261203"]


# a phase of 8 matches: room for three workers to be in the middle of one at once
GAMES = 8
TOURNAMENT = _tournament(GAMES)
# where a run is only cut in the middle: matches played before, in play, and left after
CUT_GAMES = 3
# quick heartbeats, stall limit and job look-ups: the outages and kills are seen at once
FAST = ["--heartbeat-s", "0.5", "--stalled-after-s", "3", "--poll-s", "0.2",
        "--concurrency", "1"]


def _start_worker(url: str, cwd: Path, *extra: str, mark: str | None = None
                  ) -> subprocess.Popen[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **({"CFARENA_TEST_MARK": mark} if mark else {}))
    return subprocess.Popen([CFARENA, "worker", "--db", url, "--until-done", "--json", *FAST,
                             *extra], cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _results(url: str, tournament_id: int) -> dict[str, tuple[Any, Any, Any]]:
    rows = query(url, "select key, status, totals, ranks from matches "
                      "where tournament_id = %s", tournament_id)
    return {key: (status, json.dumps(totals), json.dumps(ranks))
            for key, status, totals, ranks in rows}


def _out(proc: subprocess.Popen[str]) -> str:
    return proc.stdout.read() if proc.stdout else ""


def _err(proc: subprocess.Popen[str]) -> str:
    return proc.stderr.read() if proc.stderr else ""


def _wait(procs: list[subprocess.Popen[str]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for proc in procs:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))


@pytest.mark.postgres
def test_a_killed_worker_loses_nothing_and_results_match_one_worker(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    url = pg_cluster.create_database("workers_e2e")
    # greedy's moves 40 ms apart (the same moves): the kill below, once three jobs are
    # being played, finds the victim mid-match, not between its ack and its next job
    tournament = ["--bot", f"greedy={slow_bot(tmp_path, 'greedy', 0.04)}", *TOURNAMENT[2:]]
    created = run_json("tournaments", "create", *tournament, "--db", url,
                       cwd=tmp_path, in_process=True)
    tid, total = created["tournament_id"], created["matches"]
    assert total == 2 * GAMES and created["queued"] == total
    # the queue shows no deal: no seed of an unplayed match is in its jobs or locks
    seeds = {str(s) for (s,) in query(url, "select seed from matches")}
    jobs = query(url, "select args::text, coalesce(lock, ''), coalesce(queueing_lock, '') "
                      "from procrastinate_jobs")
    assert len(jobs) == total
    assert not any(seed in " ".join(job) for seed in seeds for job in jobs)

    # the same tournament, one worker, another database, played meanwhile: the results
    # to compare with
    alone = pg_cluster.create_database("workers_alone")
    run_json("tournaments", "create", *tournament, "--db", alone, cwd=tmp_path,
             in_process=True)
    single = _start_worker(alone, tmp_path / "alone", "--concurrency", "2")
    mark = marker()
    victim = _start_worker(url, tmp_path / "w1", mark=mark)
    workers = [victim, *(_start_worker(url, tmp_path / f"w{i}") for i in (2, 3))]
    procs = [*workers, single]
    try:
        # kill a worker while all three are in the middle of a match
        deadline = time.monotonic() + 60
        while True:
            doing = query(url, "select count(*) from procrastinate_jobs where status = 'doing'")
            if doing[0][0] == 3:
                break
            assert time.monotonic() < deadline, "the three workers never played at once"
            assert all(p.poll() is None for p in workers), [_err(p) for p in workers
                                                            if p.poll() is not None]
            time.sleep(0.05)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        # its bot processes go with it
        assert wait_no_processes(mark, tmp_path / "w1") == []
        late = _start_worker(url, tmp_path / "w4")
        procs.append(late)
        _wait([workers[1], workers[2], late, single], 150)
    finally:
        _stop(procs)
    outputs = [json.loads(_out(p)) for p in (workers[1], workers[2], late)]
    for p in (workers[1], workers[2], late):
        assert p.returncode == 0
    assert "Traceback" not in "".join(_err(p) for p in procs)

    # every scheduled match stored exactly once: finished, rated once, one log each
    results = _results(url, tid)
    assert len(results) == total and {r[0] for r in results.values()} == {"finished"}
    per_match = query(url, "select m.id, count(g.match_id) from matches m left join "
                           "game_logs g on g.match_id = m.id group by m.id")
    assert {n for _, n in per_match} == {1}
    # the rotations of a deal never overlapped in time, across workers (the deal lock)
    spans = query(url, "select key, started_at, finished_at from matches order by started_at")
    by_game: dict[str, list[tuple[Any, Any]]] = {}
    for key, started, finished in spans:
        by_game.setdefault(key.split("-")[1], []).append((started, finished))
    assert len(by_game) == GAMES
    for game, times in by_game.items():
        for (_, first_end), (second_start, _) in itertools.pairwise(times):
            assert first_end <= second_start, f"two rotations of {game} ran at once"
    # the match the killed worker held was played again (its job retried), not lost
    retried = query(url, "select count(*) from procrastinate_jobs where attempts > 0")
    assert retried[0][0] >= 1
    assert query(url, "select status::text, count(*) from procrastinate_jobs group by 1") \
        == [("succeeded", total)]
    played = sum(o["played"] for o in outputs)
    assert played >= 1  # the survivors and the late worker shared the rest
    status = run_json("tournaments", "--db", url, cwd=tmp_path, in_process=True)
    assert status[0]["status"] == "finished"  # type: ignore[index]
    assert status[0]["finished"] == total  # type: ignore[index]

    # the same results as one worker's
    assert single.returncode == 0, _err(single)
    assert _results(alone, 1) == results
    rating_rows = "select count(*) from rating_history"
    assert query(alone, rating_rows) == query(url, rating_rows)


@pytest.mark.postgres
def test_a_worker_that_loses_its_database_writes_nothing_half(
        own_pg: PgCluster, tmp_path: Path) -> None:
    url = own_pg.create_database("outage")
    # greedy's moves 40 ms apart: a match lasts over a second (the same moves)
    slow = ["--bot", f"greedy={slow_bot(tmp_path, 'greedy', 0.04)}",
            *_tournament(CUT_GAMES)[2:]]
    created = run_json("tournaments", "create", *slow, "--db", url,
                       cwd=tmp_path, in_process=True)
    total = created["matches"]
    worker = _start_worker(url, tmp_path / "w", "--concurrency", "2")
    try:
        deadline = time.monotonic() + 60
        # a match stored and one begun under a second ago, which ends in the outage
        # (stopped at the second stored match, often none was in play: matches start in
        # pairs, and the next jobs are taken at the next poll)
        while not stored_and_one_begun(url, 1.0):
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.05)
        own_pg.stop()  # mid-run: a match is being played
        time.sleep(4)
        assert worker.poll() is None, "the worker died with its database"
        own_pg.start()
        # nothing half-written: a match is finished with all its rows, or has none
        halves = query(url, "select m.id from matches m where (m.status = 'finished') <> "
                            "exists (select 1 from game_logs g where g.match_id = m.id)")
        assert halves == []
        _wait([worker], 120)
    finally:
        _stop([worker])
    err = _err(worker)
    assert worker.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    rows = query(url, "select status, count(*) from matches group by status")
    assert rows == [("finished", total)]
    assert query(url, "select count(*) from game_logs")[0][0] == total


def test_worker_needs_postgresql(tmp_path: Path) -> None:
    result = run_in_process("worker", "--db", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
    assert result.returncode == 2
    assert "needs a PostgreSQL database" in result.stderr and "Traceback" not in result.stderr


def test_worker_poll_interval_must_be_positive(tmp_path: Path) -> None:
    result = run_in_process("worker", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--poll-s",
                            "0", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --poll-s must be positive, got 0", result.stderr


def test_sqlite_schedule_then_run_tournament_plays_it(tmp_path: Path) -> None:
    """On SQLite `tournaments create` only schedules; run-tournament with the same options
    then takes the matches straight from that schedule (a resume), with no queue."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    small = _tournament(2)  # 4 matches
    created = run_json("tournaments", "create", *small, "--db", url, cwd=tmp_path, in_process=True)
    assert created["queued"] is None and created["matches"] == 4
    data = run_json("run-tournament", *small, "--db", url, cwd=tmp_path, in_process=True)
    assert data["tournament_id"] == created["tournament_id"] and data["resumed"] is True
    assert data["status"] == "finished" and data["played_now"] == 4


@pytest.mark.postgres
def test_run_tournament_on_postgresql_is_one_worker_and_resumes_after_ctrl_c(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    """run-tournament schedules, then plays as a queue worker; Ctrl-C leaves the rest of
    the jobs queued (none half-played), and the same command resumes them."""
    url = pg_cluster.create_database("run_resume")
    args = ["run-tournament", *_tournament(CUT_GAMES), "--concurrency", "1", "--db", url]
    proc = subprocess.Popen([CFARENA, *args], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=as_in_a_terminal)
    try:
        deadline = time.monotonic() + 60
        while True:
            with_jobs = query(url, "select to_regclass('procrastinate_jobs') is not null")
            if with_jobs[0][0] and query(
                    url, "select count(*) from matches where status = 'finished'")[0][0] >= 2:
                break
            assert time.monotonic() < deadline and proc.poll() is None, _err(proc)
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        _stop([proc])
    assert proc.returncode == 130, _err(proc)
    before = dict(query(url, "select key, finished_at from matches where status = 'finished'"))
    assert 2 <= len(before) < 2 * CUT_GAMES
    assert query(url, "select count(*) from procrastinate_jobs where status = 'doing'") \
        == [(0,)]
    data = run_json(*args, cwd=tmp_path)
    assert data["resumed"] is True and data["status"] == "finished"
    assert data["played_now"] == 2 * CUT_GAMES - len(before)
    after = dict(query(url, "select key, finished_at from matches where status = 'finished'"))
    assert len(after) == 2 * CUT_GAMES
    assert all(after[key] == stamp for key, stamp in before.items())  # none played again


def test_a_cut_match_is_always_retried_and_a_failing_one_is_given_up() -> None:
    """A match cut because its worker was stopped goes back to the queue however many
    attempts its job had; a match that fails for itself is given up after three."""
    from procrastinate.jobs import Job

    from cfarena.server.tournament.worker import DatabaseAway, MatchCut, MatchRetry

    retry = MatchRetry(wait_s=0.5)
    worn = Job(id=1, queue="q", lock=None, queueing_lock=None, task_name="t", attempts=7)
    for _ in range(5):  # nor one cut short by a database outage
        assert retry.get_retry_decision(exception=MatchCut("cut"), job=worn) is not None
        assert retry.get_retry_decision(exception=DatabaseAway("away"), job=worn) is not None
    assert not retry.last_try(worn)
    decisions = [retry.get_retry_decision(exception=RuntimeError("bug"), job=worn)
                 for _ in range(4)]
    assert [d is not None for d in decisions] == [True, True, True, False]
    assert retry.last_try(worn)
    assert retry.get_retry_decision(exception=MatchCut("cut"), job=worn) is not None


@pytest.mark.postgres
def test_a_worker_outlasts_a_connection_flood_and_stops_at_once_on_sigterm(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    """A bot that floods the referee's socket with connections (tests/fairplay/bots/
    flood.py) on a real worker: the worker plays on (the flooding seat forfeits with
    "connection limit 8 reached"), and a SIGTERM while a match is in play stops it
    within seconds (exit 143) with no bot process left; the cut match is not stored
    and its job is back in the queue, neither failed nor succeeded."""
    url = pg_cluster.create_database("flood_worker")
    bots = Path(__file__).resolve().parents[1] / "fairplay" / "bots"
    sdk = "python -m cfarena.sdk run "
    created = run_json("tournaments", "create", "--bot", f"evil={sdk}{bots / 'flood.py'}",
                       "--bot", f"slow={sdk}{bots / 'slow.py'}", "--players", "2",
                       "--games", "2", "--rule", "rounds=1", "--timeout-ms", "20000",
                       "--db", url, cwd=tmp_path, in_process=True)
    total = created["matches"]
    mark = marker()
    worker = subprocess.Popen(
        [CFARENA, "worker", "--db", url, *FAST], cwd=tmp_path, text=True,
        env=dict(os.environ, CFARENA_TEST_MARK=mark), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # one match stored, the next one in play
            finished = query(url, "select count(*) from matches where status = 'finished'")
            running = query(url, "select count(*) from matches where status = 'running'")
            if finished[0][0] >= 1 and running[0][0] == 1:
                break
            assert time.monotonic() < deadline and worker.poll() is None, _err(worker)
            time.sleep(0.05)
        time.sleep(0.5)  # the flood under way (or stopped) in the match in play
        sent = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        _stop([worker])
    err = _err(worker)
    assert worker.returncode == 143, err[-3000:]
    # at once: the match in play is cut, not played out (its job back in the queue,
    # below); the bound is the worker's grace for its match (cli/worker.STOP_GRACE_S,
    # 2 s) and stopping's own work, 5.3 s in all at load 17 (ci21)
    assert took < 10.0, f"the worker took {took:.1f} s to stop"
    assert "Traceback" not in err
    assert wait_no_processes(mark, tmp_path, timeout=5.0) == []
    faults = query(url, "select b.name, f.kind, f.detail from faults f join bots b on "
                        "b.id = f.bot_id join matches m on m.id = f.match_id "
                        "where m.status = 'finished'")
    assert faults and set(faults) == {("evil", "limit", "connection limit 8 reached")}
    stored = query(url, "select count(*) from matches where status = 'finished'")[0][0]
    assert 1 <= stored < total
    # the cut match's job is back in the queue (none failed, none left 'doing')
    jobs = dict(query(url, "select status::text, count(*) from procrastinate_jobs "
                           "group by 1"))
    assert jobs.get("succeeded", 0) == stored and jobs.get("todo", 0) == total - stored, jobs
