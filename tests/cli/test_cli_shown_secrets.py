"""`run-tournament` refuses to show a bot the organiser's database or log directory when
they lie in a system directory every sandbox is shown (`/opt`, `/usr/local`), not only
in the bot's own directory (test_cli_sandbox.py): the real CLI, in-process (the refusal
comes before any bot process starts)."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cfarena.server.cli import app

BOTS = ["--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
        "--rule", "rounds=single"]


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


def _refusal(*args: str) -> str:
    """The run's one line of error (it must exit 2 with nothing else on stderr)."""
    result = CliRunner().invoke(app, ["run-tournament", *BOTS, *args],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
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
