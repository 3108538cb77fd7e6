"""`cfarena bots add` + `cfarena serve` with bots that connect on their own."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import CFARENA, run_cli, run_json

BOTS = {"random": "cfarena.bots.random_bot", "greedy": "cfarena.bots.greedy",
        "smart": "cfarena.bots.smart", "rnd2": "cfarena.bots.random_bot"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(argv: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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
    for name in BOTS:
        added = run_cli("bots", "add", name, "--token", f"secret-{name}", "--db", db,
                        cwd=tmp_path)
        assert added.returncode == 0, added.stderr
    # registering the same name with another token is refused
    clash = run_cli("bots", "add", "random", "--token", "another-token", "--db", db,
                    cwd=tmp_path)
    assert clash.returncode == 2, clash.stderr
    assert clash.stderr.startswith("error: bot 'random' ") and clash.stderr.count("\n") == 1

    port = _free_port()
    serve = _start([CFARENA, "serve", "--port", str(port), "--players", "4", "--rule",
                    "rounds=2", "--concurrency", "2", "--db", db], tmp_path,
                   tmp_path / "serve.log")
    bots = []
    try:
        for name, module in BOTS.items():
            bots.append(_start(
                [sys.executable, "-m", "cfarena.sdk", "run", module, "--server",
                 f"127.0.0.1:{port}", "--token", f"secret-{name}", "--capacity", "2",
                 "--retries", "50"], tmp_path, tmp_path / f"{name}.log"))
        deadline = time.monotonic() + 90
        played = 0
        while time.monotonic() < deadline:
            listed = run_json("matches", "--status", "finished", "--db", db, cwd=tmp_path)
            played = len(listed)  # type: ignore[arg-type]
            if played >= 3:
                break
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            time.sleep(0.5)
        assert played >= 3
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0, (tmp_path / "serve.log").read_text()
    finally:
        _stop(serve)
        for proc in bots:
            _stop(proc)
    # a graceful stop leaves nothing half-written: every match is finished or aborted
    listed = run_json("matches", "--db", db, cwd=tmp_path)
    assert {m["status"] for m in listed} <= {"finished", "aborted"}  # type: ignore[union-attr]
    standings = run_json("standings", "--pool", "standard/4p", "--db", db, cwd=tmp_path)
    assert {r["bot"] for r in standings} == set(BOTS)  # type: ignore[union-attr]
    verified = run_cli("verify", "--all", "--db", db, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout


def test_serve_without_bots_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
    assert result.returncode == 2 and "no registered bots" in result.stderr
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert conn.execute("select count(*) from matches").fetchone()[0] == 0
