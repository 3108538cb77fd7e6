"""Bot subprocesses: started in their own process group, stopped by that group.

Every bot a tournament spawns runs as `sh -c COMMAND` (or an argv list) in a new
session, with CFARENA_SERVER and CFARENA_TOKEN in its environment. On Linux the
child also gets PR_SET_PDEATHSIG, so a `kill -9` of the referee takes its bots
with it. Processes are only ever signalled by their own process-group id.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Bundled bots: NAME -> the module `python -m cfarena.sdk run` loads.
BUNDLED_BOTS: dict[str, str] = {
    "random": "cfarena.bots.random_bot",
    "greedy": "cfarena.bots.greedy",
    "smart": "cfarena.bots.smart",
    "montecarlo": "cfarena.bots.montecarlo",
}


def bundled_command(name: str) -> list[str]:
    """The argv that runs a bundled bot with this interpreter."""
    return [sys.executable, "-m", "cfarena.sdk", "run", BUNDLED_BOTS[name]]


def _pdeathsig_prefix() -> list[str]:
    """`setpriv --pdeathsig TERM --` where available (util-linux), else nothing.

    A preexec_fn calling prctl would do the same, but forking a process that
    runs gRPC threads with a Python preexec_fn breaks the child's gRPC poller;
    without preexec_fn, CPython spawns with vfork and no fork handlers run.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


@dataclass
class BotProcess:
    """One running bot process (its own process group).

    Start it from the main thread: the parent-death signal fires when the
    *thread* that spawned the child exits.
    """

    name: str
    command: str | Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv: Sequence[str]
        if isinstance(self.command, str):
            argv = ["/bin/sh", "-c", "exec " + self.command]
        else:
            argv = list(self.command)
        argv = [*_pdeathsig_prefix(), *argv]
        env = dict(os.environ)
        env.update(self.env)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out if self.log_path else subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            if self.log_path and not isinstance(out, int):
                out.close()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def poll(self) -> int | None:
        """The exit code if it has exited, else None."""
        return self.proc.poll() if self.proc else None

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM the process group, then SIGKILL it if it lingers."""
        proc = self.proc
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the group id is the child's pid
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        # the leader may be gone while others in its group live on
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)


def describe_command(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)
