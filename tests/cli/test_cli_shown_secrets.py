"""`run-tournament` and `cfarena worker` refuse to show a bot the organiser's database or
log directory when they lie in a system directory every sandbox is shown (`/opt`,
`/usr/local`), not only in the bot's own directory (test_cli_sandbox.py): the real CLI,
in-process where the refusal comes before any bot process starts. A worker refuses a log
directory that only some bot's command line shows at that bot's jobs, saying why."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cfarena.server.cli import app
from cfarena.server.tournament.config import missing_defences
from cfarena.server.tournament.pool import Launch
from tests.cli.helpers import CFARENA, run_json
from tests.harness.postgres import PgCluster

BOTS = ["--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
        "--rule", "rounds=single"]

# the worker's line for a job that failed (and is retried), and why
_FAILED = re.compile(r" failed on this worker(?: \(it is retried\))?: (.*)$")


@pytest.fixture
def in_system_dir() -> Iterator[dict[str, Path]]:
    """A fresh directory under /opt and one under /usr/local (removed afterwards)."""
    made: dict[str, Path] = {}
    try:
        for root in ("/opt", "/usr/local"):
            made[root] = Path(tempfile.mkdtemp(prefix="cfarena-test-", dir=root))
        yield made
    finally:
        for path in made.values():
            shutil.rmtree(path, ignore_errors=True)


def _refusal(*args: str, command: tuple[str, ...] = ("run-tournament", *BOTS)) -> str:
    """The command's one line of error (it must exit 2 with nothing else on stderr)."""
    result = CliRunner().invoke(app, [*command, *args], env={"COLUMNS": "400"})
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    # what this machine cannot defend is said before a refusal found when the bots start
    # (the suite turns the page-cache reset off: tests/conftest.py), a line each
    machine = set(missing_defences(Launch()))
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and line.strip() not in machine]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_database_under_opt_is_refused(in_system_dir: dict[str, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = in_system_dir["/opt"] / "cfarena.db"
    line = _refusal("--db", f"sqlite:///{db}")
    assert line == (f"error: bot 'random' would be able to read {db} (it is shown /opt): keep "
                    "the database and the log directory outside the bot's directories, the "
                    "system directories and Python's"), line
    with sqlite3.connect(db) as conn:  # nothing was scheduled
        assert conn.execute("select count(*) from matches").fetchone() == (0,)


def test_a_log_directory_under_usr_local_is_refused(in_system_dir: dict[str, Path],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    logs = in_system_dir["/usr/local"] / "logs"
    line = _refusal("--db", f"sqlite:///{tmp_path / 'cfarena.db'}", "--log-dir", str(logs))
    assert line.startswith(f"error: bot 'random' would be able to read {logs} "
                           "(it is shown /usr): keep the database"), line
    assert list(logs.iterdir()) == []  # no bot's output was written there


def test_a_worker_with_its_log_directory_under_usr_local_is_refused(
        in_system_dir: dict[str, Path]) -> None:
    logs = in_system_dir["/usr/local"] / "logs"
    # refused before it looks for its database
    line = _refusal("--db", "postgresql+psycopg://u@127.0.0.1:1/nowhere", "--log-dir",
                    str(logs), command=("worker",))
    assert line == (f"error: --log-dir: every bot would be able to read {logs} (it is shown "
                    "/usr): keep it outside the system directories, Python's and the "
                    "--sandbox-bind paths"), line
    assert not logs.exists()


@pytest.mark.postgres
def test_a_worker_refuses_a_log_directory_a_bot_names_at_its_job_saying_why(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    """The bot names its directory, where the worker's log directory lies: only the
    worker knows that, when it takes the bot's job. The job fails (the queue retries it
    up to three times), nothing is played, and the worker says why in one line."""
    url = pg_cluster.create_database("shown_log_dir")
    mine = tmp_path / "mybot"
    mine.mkdir()
    (mine / "bot.py").write_text("print('hi')\n")
    run_json("tournaments", "create", "--bot", f"mine=python -m cfarena.sdk run {mine}",
             "--bot", "random", "--players", "2", "--games", "1", "--db", url, cwd=tmp_path)
    worker = subprocess.Popen(
        [CFARENA, "worker", "--db", url, "--json", "--log-dir", str(mine / "logs")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    said = ""
    # a worker that never says it is stopped after a minute (stderr then ends)
    timer = threading.Timer(60, os.killpg, (worker.pid, signal.SIGKILL))
    timer.start()
    try:
        assert worker.stderr is not None
        for line in worker.stderr:
            if _FAILED.search(line):
                said = line  # once is enough: then it is stopped
                break
        timer.cancel()
        worker.send_signal(signal.SIGTERM)
        out, rest = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    assert said, "the worker never said why its job failed:\n" + rest[-3000:]
    assert worker.returncode == 143, rest[-3000:]  # stopped by SIGTERM, as documented
    assert json.loads(out)["played"] == 0
    assert "Traceback" not in rest
    found = _FAILED.search(said.rstrip("\n"))
    assert found is not None, said
    reason = found.group(1)
    assert reason == (f"bot 'mine' would be able to read {mine / 'logs'} (it is shown {mine}): "
                      "keep the database and the log directory outside the bot's directories, "
                      "the system directories and Python's"), said
    assert list((mine / "logs").iterdir()) == []
