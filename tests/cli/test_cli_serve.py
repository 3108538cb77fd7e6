"""`cfarena bots add` + `cfarena serve` with bots that connect on their own."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from tests.harness.serve import Arena

from .helpers import run_in_process, run_json

BOTS = {"random": "cfarena.bots.random_bot", "greedy": "cfarena.bots.greedy",
        "smart": "cfarena.bots.smart", "rnd2": "cfarena.bots.random_bot"}


# on SQLite: serve on PostgreSQL is played by tests/arena/test_arena_e2e.py and
# tests/ops/test_arena_e2e.py (and its outages by test_cli_serve_faults.py)
@pytest.mark.parametrize("backend", ["sqlite"])
def test_serve_pairs_registered_bots_and_stops_cleanly(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        db = f"sqlite:///{tmp_path / 'arena.db'}"
    else:
        db = request.getfixturevalue("pg_cluster").create_database("serve_test")
    # registering and reading run in process: the processes under test are serve's
    for name in BOTS:
        added = run_in_process("bots", "add", name, "--token", f"secret-{name}", "--db", db,
                               cwd=tmp_path)
        assert added.returncode == 0, added.stderr
    # registering the same name with another token is refused
    clash = run_in_process("bots", "add", "random", "--token", "another-token", "--db", db,
                           cwd=tmp_path)
    assert clash.returncode == 2, clash.stderr
    assert clash.stderr.startswith("error: bot 'random' ") and clash.stderr.count("\n") == 1

    arena = Arena(tmp_path, db)
    try:
        bound = arena.serve("--players", "4", "--rule", "rounds=2", "--concurrency", "2")
        serve = arena.procs["serve"]
        for name, module in BOTS.items():
            arena.dial_in(name, module, f"127.0.0.1:{bound.bots}", f"secret-{name}",
                          "--capacity", "2", "--retries", "50")
        arena.wait("3 finished matches stored", lambda: _stored_finished(tmp_path) >= 3, 90)
        listed = run_json("matches", "--status", "finished", "--db", db, cwd=tmp_path,
                          in_process=True)
        assert len(listed) >= 3
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0, arena.err()
    finally:
        arena.close()
    # a graceful stop leaves nothing half-written: every match is finished or aborted
    listed = run_json("matches", "--db", db, cwd=tmp_path, in_process=True)
    assert {m["status"] for m in listed} <= {"finished", "aborted"}  # type: ignore[union-attr]
    standings = run_json("standings", "--pool", "standard/4p", "--db", db, cwd=tmp_path,
                         in_process=True)
    assert {r["bot"] for r in standings} == set(BOTS)  # type: ignore[union-attr]
    verified = run_in_process("verify", "--all", "--db", db, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout


def _stored_finished(directory: Path) -> int:
    with sqlite3.connect(directory / "arena.db", timeout=10) as conn:
        return int(conn.execute("select count(*) from matches where status = 'finished'"
                                ).fetchone()[0])


def test_serve_without_bots_is_a_usage_error(tmp_path: Path) -> None:
    result = run_in_process("serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
    assert result.returncode == 2 and "no registered bots" in result.stderr
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert conn.execute("select count(*) from matches").fetchone()[0] == 0
