"""The processes of one test: each started in its own session (process group), its
stderr (and stdout, if asked) in a file of the test's directory, waited on by
condition, and stopped by its process group, also on failure (`close`)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path


def stop(proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM to its process group, SIGKILL if it is still there after `timeout`."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill(proc)


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to its process group (if it is alive), and reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def wait_for(what: str, condition: Callable[[], bool], timeout: float,
             alive: Iterable[tuple[subprocess.Popen[bytes], Callable[[], str]]] = (),
             poll: float = 0.05) -> None:
    """Wait until `condition()` holds; AssertionError (with the output of the processes in
    `alive`: (process, its output)) if one of them exits first, or at `timeout`."""
    alive = list(alive)
    deadline = time.monotonic() + timeout
    while not condition():
        for proc, output in alive:
            if proc.poll() is not None:
                raise AssertionError(f"{what}: {proc.args!r} exited with {proc.returncode}: "
                                     f"{output()[-3000:]}")
        if time.monotonic() > deadline:
            shown = " | ".join(output()[-1500:] for _proc, output in alive)
            raise AssertionError(f"timed out waiting for {what}: {shown}")
        time.sleep(poll)


class Processes:
    """Named processes of one test, in `directory`: NAME.err holds a process's stderr
    (and NAME.out its stdout with `stdout=True`; else it is discarded)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None,
              stdout: bool = False) -> subprocess.Popen[bytes]:
        with open(self.dir / f"{name}.err", "wb") as err, \
                open(self.dir / f"{name}.out" if stdout else os.devnull, "wb") as out:
            proc = subprocess.Popen(argv, cwd=self.dir, stdout=out, stderr=err,
                                    env={**os.environ, **(env or {})}, start_new_session=True)
        self.procs[name] = proc
        return proc

    def err_path(self, name: str) -> Path:
        return self.dir / f"{name}.err"

    def err(self, name: str) -> str:
        """What process `name` wrote to stderr so far."""
        path = self.err_path(name)
        return path.read_text(errors="replace") if path.exists() else ""

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = 30,
             alive: Iterable[str] = ()) -> None:
        """`wait_for`, failing early if a process named in `alive` exits."""
        wait_for(what, condition, timeout,
                 [(self.procs[n], functools.partial(self.err, n)) for n in alive])

    def stop(self, name: str, timeout: float = 10) -> None:
        """`stop` the process `name` (SIGTERM, then SIGKILL) and forget it."""
        proc = self.procs.pop(name, None)
        if proc is not None:
            stop(proc, timeout)

    def close(self) -> None:
        """SIGKILL every process still alive."""
        for proc in self.procs.values():
            kill(proc)
