"""`cfarena worker` processes through PostgreSQL restarts, and with jobs that fail for good.

- Two real workers play a tournament while its PostgreSQL cluster is stopped and started
  again, three times: they play on and make progress each time it is back; neither prints
  a traceback or an unretrieved task exception, each says once that the queue is away and
  once that it is back; no job of a live worker is put back in the queue (every match is
  played once, none is found stored already); the stored results equal a clean run's.
- `worker --until-done` whose every job fails for good (a bot that cannot start) exits 1
  with one line that says why and what to do; the tournament is marked interrupted and
  its matches aborted with the reason (a rerun queues them again).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli, run_json
from tests.harness.postgres import PgCluster, query
from tests.harness.slow_bots import slow_bot
from tests.tournament.test_workers import FAST, _err, _out, _results, _start_worker
from tests.tournament.test_workers import _stop as _kill
from tests.tournament.test_workers import _wait as _wait_exit

pytestmark = pytest.mark.postgres


def _tournament(directory: Path) -> list[str]:
    """Deterministic bots, a fixed seed: 12 matches of two rounds. Greedy's moves come
    each after 40 ms: a match lasts over a second, so that a restart finds matches in
    play and a fast machine cannot finish the tournament between two (in CI on 97cb7d1
    both workers had finished all 12 matches by the third stop)."""
    return ["--bot", f"greedy={slow_bot(directory, 'greedy', 0.04)}", "--bot", "smart",
            "--players", "2", "--games", "6", "--rule", "rounds=2", "--seed", "20261206"]


RESTARTS = 3
# longer than a few heartbeats (FAST: 0.5 s) and than the stall limit (3 s): every
# worker sees each outage, and every heartbeat is stale when the database is back
DOWN_S = 5.0
WAIT_S = 90.0


def _finished(url: str) -> int:
    return int(query(url, "select count(*) from matches where status = 'finished'")[0][0])


def _until(what: str, done: Callable[[], bool], workers: list[subprocess.Popen[str]]
           ) -> None:
    """Wait until `done()`, the workers alive meanwhile (else their stderr)."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert all(w.poll() is None for w in workers), [_err(w)[-3000:] for w in workers]
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S:.0f} s"
        time.sleep(0.1)


def _until_finished(url: str, count: int, workers: list[subprocess.Popen[str]]) -> int:
    """Wait until `count` matches are finished (or all are); how many are."""
    _until(f"progress to {count} match(es)", lambda: _finished(url) >= count, workers)
    return _finished(url)


def _until_registered(url: str, count: int, workers: list[subprocess.Popen[str]]) -> None:
    """Wait until `count` workers have joined the queue (their start is over)."""
    _until("workers in the queue", lambda: int(
        query(url, "select count(*) from procrastinate_workers")[0][0]) >= count, workers)


def test_workers_play_on_through_database_restarts(own_pg: PgCluster, pg_cluster: PgCluster,
                                                    tmp_path: Path) -> None:
    url = own_pg.create_database("restarts")
    tournament = _tournament(tmp_path)
    created = run_json("tournaments", "create", *tournament, "--db", url,
                       cwd=tmp_path, in_process=True)
    tid, total = created["tournament_id"], created["matches"]
    # the same tournament played meanwhile with its database up throughout (in the
    # session's cluster, which is never stopped): the results to compare with
    clean = pg_cluster.create_database("restarts_clean")
    run_json("tournaments", "create", *tournament, "--db", clean, cwd=tmp_path, in_process=True)
    alone = _start_worker(clean, tmp_path / "alone", "--concurrency", "2")
    workers = [_start_worker(url, tmp_path / f"w{i}") for i in (1, 2)]
    try:
        # both workers in the queue first: one still starting when the database goes
        # away exits 2 with "cannot open database", by design (a wrong URL fails fast)
        _until_registered(url, len(workers), workers)
        done = _until_finished(url, 1, workers)
        for _ in range(RESTARTS):
            assert done < total, "the tournament ended between restarts: slow its bot"
            own_pg.stop()  # matches are in play
            time.sleep(DOWN_S)
            assert all(w.poll() is None for w in workers), [
                f"a worker died with its database: {_err(w)[-3000:]}" for w in workers
                if w.poll() is not None]
            own_pg.start()
            # progress once it is back (not after a long back-off)
            done = _until_finished(url, min(done + 1, total), workers)
        _wait_exit([*workers, alone], 120)
    finally:
        _kill([*workers, alone])
    errs = [_err(w) for w in workers]
    for worker, err in zip(workers, errs, strict=True):
        assert worker.returncode == 0, err[-3000:]
        assert "Traceback" not in err and "never retrieved" not in err, err[-3000:]
        assert "put back in the queue" not in err, err[-3000:]  # the other one was alive
        away, back = err.count("job queue unavailable"), err.count("job queue available again")
        assert 1 <= away == back <= RESTARTS, err[-3000:]
    outputs = [json.loads(_out(w)) for w in workers]
    # each match played once: no job was taken from a live worker and played again
    assert sum(o["played"] for o in outputs) == total, outputs
    assert sum(o["skipped"] for o in outputs) == 0, outputs
    results = _results(url, tid)
    assert len(results) == total and {r[0] for r in results.values()} == {"finished"}
    assert query(url, "select count(*), count(distinct match_id) from game_logs") == [
        (total, total)]
    assert query(url, "select status::text, count(*) from procrastinate_jobs group by 1") \
        == [("succeeded", total)]
    assert query(url, "select status from tournaments") == [("finished",)]

    # the same results as the run with the database up throughout
    assert alone.returncode == 0, _err(alone)[-3000:]
    assert _results(clean, 1) == results


def test_until_done_with_jobs_failed_for_good_exits_1_and_says_why(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    url = pg_cluster.create_database("failed_for_good")
    created = run_json("tournaments", "create", "--bot", "broken=/nonexistent/bot", "--bot",
                       "greedy", "--players", "2", "--games", "1", "--rule", "rounds=1",
                       "--db", url, cwd=tmp_path, in_process=True)
    tid, total = created["tournament_id"], created["matches"]
    result = run_cli("worker", "--db", url, "--until-done", *FAST, cwd=tmp_path, timeout=180)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: tournament {tid} is not finished: {total} match(es) "
                           "could not be played (bot 'broken' "), last
    assert "/nonexistent/bot" in last and "run-tournament" in last, last
    assert query(url, "select status from tournaments") == [("interrupted",)]
    reasons = query(url, "select status, reason from matches")
    assert len(reasons) == total
    for status, reason in reasons:
        assert status == "aborted", reasons
        assert reason.startswith("not played: its job failed for good (bot 'broken' "), reason
