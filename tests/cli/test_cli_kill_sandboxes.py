"""kill -9 of run-tournament at random moments: no process of its sandboxes survives it
(issue 21). The run's processes are told apart from other runs' on this machine by their
working directory: the run's own (its sandboxes start there)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from tests.harness.host_processes import pids_where

from .helpers import CFARENA

KILLS = 4


def _processes_in(cwd: Path) -> list[int]:
    """Live processes (any user: bwrap runs as root, bots as a sandbox uid) working in `cwd`."""
    return pids_where(lambda entry: os.readlink(entry / "cwd") == str(cwd))


def _describe(pids: list[int]) -> list[str]:
    shown = []
    for pid in pids:
        with contextlib.suppress(OSError):
            shown.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}")
    return shown


def test_no_sandbox_outlives_a_killed_run(tmp_path: Path) -> None:
    rng = random.Random()
    killed = attempt = 0
    while killed < KILLS:
        attempt += 1
        assert attempt <= 3 * KILLS, "the runs kept ending before their kill: lengthen them"
        run_dir = tmp_path / f"run{attempt}"
        run_dir.mkdir()
        args = ["run-tournament", "--bot", "random", "--bot", "greedy", "--bot", "smart",
                "--players", "2", "--games", "4", "--rule", "rounds=1", "--concurrency", "3",
                "--db", f"sqlite:///{run_dir / 'cfarena.db'}"]
        run = subprocess.Popen([CFARENA, *args], cwd=run_dir, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            # a random moment once its sandboxes begin to start: while more are started
            deadline = time.monotonic() + 60
            while len(_processes_in(run_dir)) < 2:  # the run and its first sandbox
                assert run.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)  # (a scan reads every process's cwd: not in a busy loop)
            time.sleep(rng.uniform(0.0, 1.5))
            if run.poll() is not None:  # it ended first (a fast machine): no kill tested
                continue
            os.kill(run.pid, signal.SIGKILL)  # the run only, as `kill -9 PID` does
            killed += 1
            run.wait(timeout=10)
            deadline = time.monotonic() + 10
            while (left := _processes_in(run_dir)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert left == [], f"kill {killed}: left running: {_describe(left)}"
        finally:
            for pid in _processes_in(run_dir):  # only on failure: this run's, by their pids
                os.kill(pid, signal.SIGKILL)
            if run.poll() is None:
                run.kill()
                run.wait()
