"""A queue worker acknowledges a match job only after its match is stored: a real
`cfarena worker` is killed (SIGKILL) after playing a match and before storing it, and
after storing it and before acknowledging the job; either way the match ends up stored
exactly once and its job is finished by another worker.

Each test stops the worker at exactly that point from outside, with PostgreSQL row
locks held by the test (no hook in the worker):

- before the store: the test holds FOR KEY SHARE on the tournament's match rows. The
  worker's `mark_running` (an UPDATE of non-key columns) passes it; the store, which
  begins with `SELECT ... FOR UPDATE` of its match row, waits on it. The test sees the
  worker's session wait on its lock (pg_blocking_pids), so the match has been played.
- before the acknowledgement: while the store waits, the test also locks the job's row
  (FOR UPDATE), then lets the store through; the worker's acknowledgement (procrastinate
  updating the job row) then waits on the test's lock, with the match stored.

The test then kills the worker and ends its waiting database session, as if the worker
had died before that statement reached the database, and lets go of its locks. A second
worker takes the job back once the first one's heartbeat has stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.helpers import marker, run_json, wait_no_processes
from tests.harness.postgres import PgCluster, conninfo, query
from tests.tournament.test_workers import _start_worker, _stop

# one deal in both rotations: 2 matches, never at once (the deal lock); the job of the
# first one taken is the one the test stops
TOURNAMENT = ["--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
              "--rule", "rounds=single"]
WAIT_S = 60.0
# how long an acknowledgement sent before the store would take to show (the worker has
# nothing else to do): the job must still be running after it
ACK_GRACE_S = 1.0


def _until(what: str, check: Callable[[], Any], proc: subprocess.Popen[str]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := check()):
        assert proc.poll() is None, f"the worker exited while waiting for {what}: " + (
            proc.stderr.read() if proc.stderr else "")
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S:g} s"
        time.sleep(0.02)
    return found


def _blocked_by(url: str, locker: psycopg.Connection[Any]) -> list[tuple[int, str]]:
    """(pid, query) of the sessions waiting on a lock `locker` holds."""
    rows = query(url, "select pid, query from pg_stat_activity "
                      "where %s = any(pg_blocking_pids(pid))", locker.info.backend_pid)
    return [(int(pid), str(statement)) for pid, statement in rows]


def _job_status(url: str, job_id: int) -> str:
    return str(query(url, "select status::text from procrastinate_jobs where id = %s",
                     job_id)[0][0])


def _stored(url: str, match_id: str) -> tuple[Any, ...]:
    """What the store wrote of a match: its status, result and finishing time, its game
    log's hash and its rating rows."""
    match = query(url, "select status, totals::text, ranks::text, finished_at from matches "
                       "where id = %s", match_id)[0]
    logs = query(url, "select sha256 from game_logs where match_id = %s", match_id)
    ratings = query(url, "select bot_id, pool, elo_before, elo_after, created_at "
                         "from rating_history where match_id = %s order by 1, 2", match_id)
    return (*match, logs, ratings)


class Victim:
    """A tournament of 2 matches and the worker that is to die playing its first one."""

    def __init__(self, pg: PgCluster, name: str, tmp: Path) -> None:
        self.url = pg.create_database(name)
        self.tmp = tmp
        created = run_json("tournaments", "create", *TOURNAMENT, "--db", self.url, cwd=tmp,
                           in_process=True)
        self.tournament_id, self.total = created["tournament_id"], created["matches"]
        assert self.total == 2
        self.mark = marker()
        self.rows = psycopg.connect(conninfo(self.url))  # holds the match rows
        self.job_row = psycopg.connect(conninfo(self.url))  # holds the job's row
        self.rows.execute("select id from matches where tournament_id = %s for key share",
                          (self.tournament_id,))
        self.worker = _start_worker(self.url, tmp / "w1", mark=self.mark)
        self.procs = [self.worker]

    def close(self) -> None:
        _stop(self.procs)
        self.rows.close()
        self.job_row.close()

    def wait_store(self) -> tuple[int, str]:
        """Until the worker, having played a match, waits to store it: (job id, match id)."""
        blocked = _until("store waiting on the match row",
                         lambda: _blocked_by(self.url, self.rows), self.worker)
        assert len(blocked) == 1 and "for update" in blocked[0][1].lower(), blocked
        assert "matches" in blocked[0][1], blocked
        time.sleep(ACK_GRACE_S)
        # the match it played (the first one started) and that match's job
        match_id = query(self.url, "select id from matches where status = 'running' "
                                   "order by started_at limit 1")[0][0]
        job_id = query(self.url, "select id from procrastinate_jobs "
                                 "where args->>'match_id' = %s", match_id)[0][0]
        assert _job_status(self.url, job_id) == "doing", "acknowledged before it was stored"
        return int(job_id), str(match_id)

    def kill(self) -> None:
        """SIGKILL the worker (its bots go with it), then end its waiting database
        session: what it had sent but the database had not done is not done."""
        waiting = [pid for locker in (self.rows, self.job_row)
                   for pid, _ in _blocked_by(self.url, locker)]
        assert waiting, "the worker was not stopped where the test put it"
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait()
        for pid in waiting:
            query(self.url, "select pg_terminate_backend(%s)", pid)
        self.rows.rollback()
        self.job_row.rollback()
        assert wait_no_processes(self.mark, self.tmp / "w1") == []

    def finish_with_another_worker(self) -> dict[str, Any]:
        """A second worker retries the dead one's job and plays the rest; what it did."""
        other = _start_worker(self.url, self.tmp / "w2")
        self.procs.append(other)
        out, err = other.communicate(timeout=120)
        assert other.returncode == 0, err[-3000:]
        assert "Traceback" not in err
        result: dict[str, Any] = json.loads(out)
        return result

    def assert_stored_once(self, job_id: int) -> None:
        """Every match finished with one game log and one rating row per bot and pool;
        every job succeeded, the dead worker's after a retry."""
        assert query(self.url, "select status, count(*) from matches group by 1") == [
            ("finished", self.total)]
        assert query(self.url, "select count(*), count(distinct match_id) from game_logs") \
            == [(self.total, self.total)]
        per_match = query(self.url, "select match_id, count(*) from rating_history group by 1")
        assert len(per_match) == self.total and len({n for _, n in per_match}) == 1, per_match
        assert query(self.url, "select status::text, count(*) from procrastinate_jobs "
                               "group by 1") == [("succeeded", self.total)]
        assert query(self.url, "select attempts from procrastinate_jobs where id = %s",
                     job_id)[0][0] >= 1  # retried


@pytest.fixture
def victim(request: pytest.FixtureRequest, pg_cluster: PgCluster, tmp_path: Path
           ) -> Iterator[Victim]:
    one = Victim(pg_cluster, request.node.name.removeprefix("test_")[:40], tmp_path)
    try:
        yield one
    finally:
        one.close()


@pytest.mark.postgres
def test_a_worker_killed_between_play_and_store_loses_nothing(victim: Victim) -> None:
    job_id, match_id = victim.wait_store()
    victim.kill()
    # the match was played but not stored: it is not finished, and its job not done
    assert query(victim.url, "select status from matches where id = %s",
                 match_id) == [("running",)]
    assert _job_status(victim.url, job_id) == "doing"
    done = victim.finish_with_another_worker()
    assert (done["played"], done["skipped"]) == (2, 0), done  # played again from its seed
    victim.assert_stored_once(job_id)


@pytest.mark.postgres
def test_a_worker_killed_between_store_and_acknowledgement_loses_nothing(victim: Victim
                                                                         ) -> None:
    job_id, match_id = victim.wait_store()
    victim.job_row.execute("select id from procrastinate_jobs where id = %s for update",
                           (job_id,))
    victim.rows.rollback()  # the store goes through; the acknowledgement waits
    blocked = _until("acknowledgement waiting on the job row",
                     lambda: _blocked_by(victim.url, victim.job_row), victim.worker)
    assert len(blocked) == 1 and "procrastinate" in blocked[0][1], blocked
    stored = _stored(victim.url, match_id)
    assert stored[0] == "finished" and stored[-2] and stored[-1], stored
    victim.kill()
    assert _job_status(victim.url, job_id) == "doing"  # not acknowledged
    done = victim.finish_with_another_worker()
    # the retried job found its match stored: not played, not stored again
    assert (done["played"], done["skipped"]) == (1, 1), done
    assert _stored(victim.url, match_id) == stored
    victim.assert_stored_once(job_id)
