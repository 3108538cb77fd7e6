"""Running the `cfarena` CLI as a real subprocess, and finding what it left behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.tournament.forks import ForkServer
from tests.harness.host_processes import pids_where
from tests.harness.sandboxes import run_sandboxes

CFARENA = shutil.which("cfarena") or str(Path(sys.executable).with_name("cfarena"))


def run_cli(*args: str, cwd: Path, timeout: float = 240, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "120", **(env or {})}
    proc = subprocess.Popen(
        [CFARENA, *args], cwd=cwd, env=full_env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_cli_then(*args: str, cwd: Path, db: Path, then: Callable[[], None],
                 timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`cfarena ARGS` (a tournament storing into the SQLite file `db`), calling `then()`
    once its first match is stored (or after 120 s): a change to the bots' world while
    it runs."""
    proc = subprocess.Popen([CFARENA, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and finished_matches(db) < 1:
            time.sleep(0.1)
        then()
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def finished_matches(db: Path) -> int:
    """Finished matches in the SQLite file `db` (0 while it cannot be read)."""
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("select count(*) from matches "
                                    "where status = 'finished'").fetchone()[0])
    except sqlite3.Error:
        return 0


@contextlib.contextmanager
def cli_process(*args: str, cwd: Path, mark: str) -> Iterator[subprocess.Popen[str]]:
    """`cfarena ARGS` started as from a terminal (its own session, SIGINT at its default,
    CFARENA_TEST_MARK=mark in its environment, output piped); killed with its process
    group if it still runs when the block ends."""
    proc = subprocess.Popen([CFARENA, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, CFARENA_TEST_MARK=mark),
                            preexec_fn=as_in_a_terminal)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main_reports(report: str, *args: str, cwd: Path) -> tuple[str, str]:
    """Run `cfarena ARGS` as its entry point does (`main`, in a fresh Python), which must
    succeed; (its output, and what the expression `report` (over `gc` and `sys`) gave
    at exit): what the process was like once the command had worked."""
    code = ("import atexit, gc, sys\n"
            "from cfarena.server.cli import main\n"
            f"atexit.register(lambda: print('REPORT', repr({report}), file=sys.stderr))\n"
            "sys.argv = ['cfarena', *sys.argv[1:]]\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, cwd=cwd, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    *shown, last = done.stderr.strip().splitlines()
    assert last.startswith("REPORT "), done.stderr
    return done.stdout + "\n".join(shown), last.removeprefix("REPORT ")


def run_in_process(*args: str, cwd: Path, env: dict[str, str] | None = None
                   ) -> subprocess.CompletedProcess[str]:
    """`run_cli` in this process (click's CliRunner on the command `cfarena` runs, in
    `cwd`): for what starts no process and where no process behaviour is under test
    (usage errors, help, reading a database). A traceback is a `returncode` of 1 with
    the exception in `stderr`, as the real command would show."""
    from click.testing import CliRunner

    from cfarena.server.cli import command

    with contextlib.chdir(cwd):
        result = CliRunner().invoke(command(), list(args), prog_name="cfarena",
                                    env={"COLUMNS": "120", **(env or {})})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["cfarena", *args], result.exit_code, result.stdout,
                                       stderr)


def run_json(*args: str, cwd: Path, timeout: float = 240, in_process: bool = False
             ) -> dict[str, Any]:
    """`cfarena ARGS --json`, which must succeed, its output parsed: a subprocess, or
    `run_in_process` (`in_process`: reads, where no process behaviour is under test)."""
    result = (run_in_process(*args, "--json", cwd=cwd) if in_process
              else run_cli(*args, "--json", cwd=cwd, timeout=timeout))
    assert result.returncode == 0, result.stderr[-3000:]
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def as_in_a_terminal() -> None:
    """`preexec_fn` of a command a test will Ctrl-C: SIGINT at its default, as for a
    command typed in a terminal. A test run started in the background of a script
    (`bash .ci/run &`) inherits SIGINT ignored, and an ignored SIGINT never reaches
    Python (asyncio.run then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def marker() -> str:
    return f"cfarena-test-{uuid.uuid4().hex}"


def processes_with_marker(mark: str) -> list[int]:
    """PIDs of live processes whose environment carries CFARENA_TEST_MARK=mark."""
    needle = f"CFARENA_TEST_MARK={mark}".encode()
    return pids_where(lambda entry: needle in (entry / "environ").read_bytes().split(b"\0"))


def wait_no_processes(mark: str, cwd: Path, timeout: float = 15.0) -> list[int]:
    """Wait until no process carries the marker (the cfarena command and anything that
    inherited its environment) and no sandboxed bot process of the run in `cwd` is alive
    (`tests.harness.sandboxes`); the PIDs of those left."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with_marker(mark) + [
            p.pid for p in run_sandboxes(cwd, zombies=False)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def one_match_database(db: Path, match_id: str = "m1") -> str:
    """A SQLite database at `db` holding one finished 2-player match (`match_id`, played
    in-process by the simulation: no processes); its URL."""
    import dataclasses

    from cfarena.server.replay.simulate import simulate_record
    from cfarena.server.storage import MatchPlan, open_database
    from cfarena.server.storage.match_writer import to_stored

    rules = {"preset": "standard", "rounds": "single"}
    url = f"sqlite:///{db}"
    with open_database(url) as store:
        seats = [store.register_bot(name, name * 64).bot_id for name in ("a", "b")]
        store.schedule_matches(None, [MatchPlan(match_id, 7, rules, 2, seats)])
        record = simulate_record(rules, 2, 7, names=["a", "b"])
        assert store.record_match(to_stored(dataclasses.replace(record, match_id=match_id)))
    return url



def one_match_luck(db: Path) -> tuple[str, dict[int, tuple[str, int | None]], tuple[float, ...]]:
    """`one_match_database` ("m1"), and its seats (bot and total by seat) and each seat's
    luck as `sprt.luck` computes it from the stored game log."""
    from cfarena.server.sprt.luck import log_luck
    from cfarena.server.storage import open_database

    url = one_match_database(db)
    with open_database(url) as store:
        log = store.get_log("m1")
        detail = store.get_match("m1")
    assert log is not None and detail is not None
    seats = {s.seat: (s.bot_name, s.total) for s in detail.match.seats}
    return url, seats, log_luck(log)


def copy_played(played: Path, directory: Path) -> Path:
    """A copy of the played tournament's database in `directory` (the file and any
    journal beside it); the copy's path."""
    for path in played.parent.glob(f"{played.name}*"):
        shutil.copy2(path, directory / path.name)
    return directory / played.name


def count_fork_servers(monkeypatch: pytest.MonkeyPatch) -> list[ForkServer]:
    """The fork servers this process starts from now on (each started for real)."""
    started: list[ForkServer] = []
    start = ForkServer.start

    async def counted(server: ForkServer, timeout: float) -> None:
        started.append(server)
        await start(server, timeout)

    monkeypatch.setattr(ForkServer, "start", counted)
    return started
