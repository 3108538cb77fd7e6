"""A bot process (a sandbox's bwrap, or a bot run unsandboxed) dies with the referee that
started it, whenever the referee dies (issue 21: a kill -9 of run-tournament left a bwrap
running in 1 of 14 kills)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
