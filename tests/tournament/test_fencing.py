"""A worker frozen mid-match past the stall limit stores nothing when it wakes: two real
`cfarena worker` processes on a real PostgreSQL, the first frozen (SIGSTOP) while it
plays a match, the second given the match (`retry_stalled`) and, once it has started
it, the first woken (SIGCONT) to finish its own copy first: a copy whose bots were
charged a timeout for the freeze. The match's lease (`mark_running`) was taken from the
frozen worker: its copy is refused in the storing transaction, and the stored
tournament equals an undisturbed run's with the same seed (deterministic bots), with no
fault. The woken worker says so in one line, acknowledges nothing it no longer holds,
and prints no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.storage import open_database
from tests.cli.helpers import CFARENA, run_json
from tests.harness.postgres import PgCluster, query
from tests.tournament.test_workers import _start_worker, _stop

# one deal in both rotations (2 matches, never at once: the deal lock), greedy and smart
# are deterministic
TOURNAMENT = ["--bot", "greedy", "--bot", "smart", "--players", "2", "--games", "1",
              "--rule", "rounds=5", "--seed", "20261206"]
WAIT_S = 30.0


def _until(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S:g} s"
        time.sleep(0.02)
    return found


def _stored(url: str) -> dict[str, tuple[Any, ...]]:
    """Per match key: its status, and per seat the bot, total, rank, forfeit and faults."""
    with open_database(url, create=False) as db:
        return {m.key: (m.status.value, tuple((s.bot_name, s.total, s.rank, s.forfeited,
                                               s.faults) for s in m.seats))
                for m in db.list_matches()}


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_a_worker_frozen_past_the_stall_limit_stores_nothing(pg_cluster: PgCluster,
                                                             tmp_path: Path) -> None:
    url = pg_cluster.create_database("fenced_worker")
    alone = f"sqlite:///{tmp_path / 'alone.db'}"
    created = run_json("tournaments", "create", *TOURNAMENT, "--db", url, cwd=tmp_path,
                       in_process=True)
    assert created["matches"] == 2
    frozen = _start_worker(url, tmp_path / "frozen")
    procs = [frozen]
    try:
        # frozen in the middle of its first match
        match_id, started = _until("match in play", lambda: query(
            url, "select id, started_at from matches where status = 'running'"))[0]
        os.kill(frozen.pid, signal.SIGSTOP)
        other = _start_worker(url, tmp_path / "other")
        # the undisturbed run, meanwhile: one run-tournament on SQLite, with the same seed
        undisturbed = subprocess.Popen(
            [CFARENA, "run-tournament", *TOURNAMENT, "--db", alone], cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        procs += [other, undisturbed]
        # past the stall limit (3 s) the other worker is given the match and starts it
        _until("the match started again", lambda: query(
            url, "select 1 from matches where id = %s and started_at > %s", match_id, started))
        os.kill(frozen.pid, signal.SIGCONT)
        out, err = frozen.communicate(timeout=60)
        other_out, other_err = other.communicate(timeout=60)
    finally:
        for proc in procs:  # never left stopped
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        _stop(procs)
    assert frozen.returncode == 0 and other.returncode == 0, err[-3000:] + other_err[-3000:]
    assert "Traceback" not in err + other_err and "never retrieved" not in err
    # it says in one line that its copy is not stored: its lease is gone, or (the freeze
    # cut a seat's connection: the referee's stall voids the match first) the match it
    # would play again is finished, and its job is no longer its own
    assert err.count(f"match {match_id}: its lease is ") == 1 or (
        "the referee stalled" in err and "is no longer this worker's" in err), err
    assert json.loads(other_out)["played"] >= 1
    assert json.loads(out)["played"] + json.loads(other_out)["played"] == 2

    # what is stored is the copy played under the valid lease: an undisturbed run's
    assert undisturbed.wait(timeout=60) == 0, undisturbed.stderr
    stored = _stored(url)
    assert stored == _stored(alone)
    assert {status for status, _ in stored.values()} == {"finished"}
    assert query(url, "select count(*) from faults") == [(0,)]
    # 2 matches, 2 seats, rated in the tournament's own pool only (never "global")
    assert query(url, "select count(*) from rating_history") == [(2 * 2,)]
    assert query(url, "select status::text, count(*) from procrastinate_jobs group by 1") \
        == [("succeeded", 2)]
