"""A bot process (a sandbox's bwrap, or a bot run unsandboxed) dies with the referee that
started it, whenever the referee dies (issue 21: a kill -9 of run-tournament left a bwrap
running in 1 of 14 kills); so does a sandbox that bwrap was still setting up (CI: a kill -9
of run-tournament left bwrap's child waiting for the bwrap that was killed)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cfarena.server.sandbox import cgroups, keeper
from tests.harness.host_processes import pids_where

# The "referee": builds the prefix, forks, and dies at once; the child waits until its
# parent is gone and only then runs the prefix, as a child does when the referee is
# killed between the fork and setpriv's prctl (the kernel then sends no signal).
REFEREE = """
import os, sys, time
from cfarena.server.sandbox import pdeathsig_prefix
prefix = pdeathsig_prefix()
assert prefix, "setpriv is missing"
referee = os.getpid()
child = os.fork()
if child == 0:
    if sys.argv[1] == "dies-first":
        while os.getppid() == referee:
            time.sleep(0.005)
    os.execv(prefix[0], [*prefix, "sleep", "60"])
print(child, flush=True)
if sys.argv[1] == "dies-first":
    os._exit(0)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _start_referee(mode: str) -> tuple[subprocess.Popen[str], int]:
    referee = subprocess.Popen([sys.executable, "-c", REFEREE, mode], text=True,
                               stdout=subprocess.PIPE, start_new_session=True)
    assert referee.stdout is not None
    return referee, int(referee.stdout.readline())


def test_a_child_whose_referee_died_before_its_prctl_does_not_run() -> None:
    referee, child = _start_referee("dies-first")
    try:
        referee.wait(timeout=10)
        assert _gone_within(child, 10), "the child outlived its referee"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_child_dies_when_its_referee_is_killed() -> None:
    referee, child = _start_referee("lives")
    try:
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"sleep\0"):
            assert time.monotonic() < deadline, "the prefix did not run its command"
            time.sleep(0.01)
        os.kill(referee.pid, signal.SIGKILL)
        referee.wait(timeout=10)
        assert _gone_within(child, 10), "the child outlived its referee"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        if referee.poll() is None:
            referee.kill()
            referee.wait()


# A referee that starts SANDBOXES sandboxes at once and waits: killed while they start,
# some bwrap is killed while it sets its sandbox up (before bwrap's child has asked to die
# with it: 13 of 60 such kills left a sandbox running without the keeper, 0 of 60 with it)
SANDBOXES = 6
SETUP = """
import asyncio, sys
from cfarena.server.sandbox import BotProcess, cgroups
print(cgroups.available(), flush=True)
async def main():
    sandboxes = [BotProcess(f"s{i}", ["sleep", "60"], {"PATH": "/usr/bin:/bin"})
                 for i in range(int(sys.argv[1]))]
    await asyncio.gather(*(sandbox.start() for sandbox in sandboxes))
    await asyncio.sleep(60)
asyncio.run(main())
"""
KILLS = 8


def _in_cgroups_below(name: str) -> list[int]:
    """Processes in a cgroup below a referee's parent `name` (cfarena-PID-START)."""
    return pids_where(lambda entry: f"/{name}/" in (entry / "cgroup").read_text(),
                      zombies=True)


def test_no_sandbox_outlives_a_referee_killed_while_bwrap_sets_it_up() -> None:
    if not all(cgroups.defences().values()):
        pytest.fail(f"no cgroups for sandboxes here: {cgroups.available()}", pytrace=False)
    rng = random.Random()
    for attempt in range(KILLS):
        referee = subprocess.Popen([sys.executable, "-c", SETUP, str(SANDBOXES)], text=True,
                                   stdout=subprocess.PIPE, start_new_session=True)
        name = ""
        try:
            assert referee.stdout is not None
            referee.stdout.readline()  # its cgroups (and keeper) are there: sandboxes start
            name = f"cfarena-{referee.pid}-{keeper.start_time(referee.pid)}"
            time.sleep(rng.uniform(0.0, 0.8))  # while they start
            os.kill(referee.pid, signal.SIGKILL)
            referee.wait(timeout=10)
            deadline = time.monotonic() + 10
            while (left := _in_cgroups_below(name)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert left == [], f"kill {attempt + 1}: left running: {left}"
            # and its cgroups are removed (the parents below our own cgroups: its own too)
            parents = [p.parent / name for p in cgroups._support().parents.values()]
            while any(p.exists() for p in parents) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(p.exists() for p in parents), f"kill {attempt + 1}: cgroups left"
        finally:
            for pid in _in_cgroups_below(name) if name else []:  # on failure: by their pids
                os.kill(pid, signal.SIGKILL)
            if referee.poll() is None:
                referee.kill()
                referee.wait()
