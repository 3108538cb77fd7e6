"""The keeper of a referee's sandbox cgroups: a process that outlives the referee only
to kill whatever still runs in them, and to remove them.

A sandbox dies with the referee through `PR_SET_PDEATHSIG`, which the kernel honours
only for a process that asked while its parent still lived. bwrap's child (the
sandbox's init) asks for it itself, after the sandbox is set up: a referee killed
while bwrap sets a sandbox up takes bwrap along, but not bwrap's child, which then
runs on (or waits for ever for the bwrap that was to let it go on). What every
process of a sandbox does share is the sandbox's cgroups, which it cannot leave
(`cgroups`). So a referee that has cgroups for its sandboxes starts a keeper
(`start`): it waits until the referee has exited (a pidfd of it turns readable),
then SIGKILLs every process in a cgroup below the referee's parents until none is
left, and removes those cgroups and the parents. After a referee that ended
normally there is nothing left to kill. A keeper runs only the standard library.

Run as `python -I -S keeper.py PID START_TIME PARENT...` (PARENT: the referee's
parent directory in each controller; `start` builds that command).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# how long a sweep goes on killing in a cgroup that keeps processes (e.g. ones that
# are exiting slowly) before it leaves that cgroup in place
SWEEP_SECONDS = 10.0


def start_time(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), None if there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def start(parents: Sequence[Path]) -> subprocess.Popen[bytes]:
    """Start the keeper of this process's sandbox cgroups below `parents`. It runs in
    a session of its own (a signal to the referee's process group spares it), in `/`."""
    referee = os.getpid()
    return subprocess.Popen(
        [sys.executable, "-I", "-S", os.path.abspath(__file__), str(referee),
         str(start_time(referee)), *map(str, parents)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd="/", start_new_session=True)


def sweep(parent: Path, seconds: float = SWEEP_SECONDS) -> bool:
    """Kill every process in the cgroups below `parent` and remove them and `parent`;
    whether all are gone (a cgroup that still holds processes after `seconds` stays)."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError):
            for cgroup in [d for d in parent.iterdir() if d.is_dir()]:
                if not _kill_all_in(cgroup):
                    with contextlib.suppress(OSError):
                        cgroup.rmdir()
        try:
            parent.rmdir()
        except FileNotFoundError:
            pass  # removed already (by the referee at its exit)
        except OSError:  # EBUSY: a cgroup below it still holds processes
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
            continue
        return True


def _kill_all_in(cgroup: Path) -> bool:
    """SIGKILL the processes in `cgroup`; whether there were any. Each is signalled
    through a pidfd opened while it was listed there and only if it still is, so a PID
    freed and reused meanwhile is never hit (by its PID where the kernel has no pidfds)."""
    listed = _procs(cgroup)
    pidfds: dict[int, int] = {}
    try:
        for pid in listed:
            try:
                pidfds[pid] = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            except OSError:  # no pidfds (Linux before 5.3): by PID
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        still = _procs(cgroup)
        for pid, fd in pidfds.items():
            if pid in still:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        for fd in pidfds.values():
            os.close(fd)
    return bool(listed)


def _procs(cgroup: Path) -> set[int]:
    try:
        return {int(line) for line in (cgroup / "cgroup.procs").read_text().split()}
    except OSError:
        return set()


def _wait_for_exit(pid: int, started: str) -> None:
    """Return once process `pid` (started at `started`) has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # gone already
    except OSError:  # no pidfds (Linux before 5.3): look now and then
        while start_time(pid) == started:
            time.sleep(1.0)
        return
    try:
        if start_time(pid) != started:
            return  # the PID is another process's now: the referee is gone
        select.select([fd], [], [])
    finally:
        os.close(fd)


def main(argv: Sequence[str]) -> None:
    pid, started, *parents = argv
    _wait_for_exit(int(pid), started)
    for parent in parents:
        sweep(Path(parent))


if __name__ == "__main__":
    main(sys.argv[1:])
