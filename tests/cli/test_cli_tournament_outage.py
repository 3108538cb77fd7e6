"""`run-tournament` on PostgreSQL survives the database going away and coming back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cfarena.server.storage import open_database
from tests.harness.postgres import PgCluster
from tests.harness.slow_bots import slow_bot, stored_and_one_begun

from .helpers import CFARENA

pytestmark = pytest.mark.postgres


def _wait(proc: subprocess.Popen[str], stderr: Path, what: str, done: Callable[[], bool]
          ) -> None:
    deadline = time.monotonic() + 120
    while not done():
        assert proc.poll() is None, stderr.read_text()[-3000:]
        assert time.monotonic() < deadline, f"no {what} within 120 s"
        time.sleep(0.1)


def test_matches_finished_while_postgres_is_down_are_stored_when_it_returns(
        own_pg: PgCluster, tmp_path: Path) -> None:
    url = own_pg.create_database("outage")
    # greedy's moves 60 ms apart: a match lasts 2-3 s, and one begun under a second ago
    # ends while the database is down (the run then has a record it cannot store)
    slow = slow_bot(tmp_path, "greedy", 0.06)
    args = [CFARENA, "run-tournament", "--bot", f"slow={slow}",
            "--bot", "random", "--players", "2", "--games", "4", "--rule", "rounds=2",
            "--concurrency", "2", "--db", url, "--json"]
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err_file:
        proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=err_file,
                                text=True, start_new_session=True)
    try:
        _wait(proc, stderr, "a stored match and one just started",
              lambda: stored_and_one_begun(url, 1.0))
        own_pg.stop()  # matches go on; their records wait
        # until the run has met the outage (a record it could not store), not a fixed time
        _wait(proc, stderr, "the storage warning",
              lambda: "storage unavailable" in stderr.read_text())
        assert proc.poll() is None, "the run died with its database"
        own_pg.start()
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = stderr.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    assert "storage unavailable" in err and "storage available again" in err
    data = json.loads(out)
    assert data["status"] == "finished" and data["matches"] == 8
    with open_database(url, create=False) as db:
        matches = db.list_matches(limit=None)
        assert len(matches) == 8 and all(m.status == "finished" for m in matches)
        # each stored once, with both seats' output
        for match in matches:
            assert len(db.seat_logs(match.id)) == 2
    assert sum(row["matches"] for row in data["standings"]) == 16
