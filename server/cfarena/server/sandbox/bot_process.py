"""A bot process for one match, started in its sandbox (or, trusted, without one).

`MatchProcess` is what the tournament knows of any such process, a plain one
(`BotProcess`) or one forked by a fork server (`tournament.forks.ForkedProcess`):
the first limit it breached, its output kept under the output limit, how it
ended, and how it is stopped.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from cfarena.server.own_tasks import settle
from cfarena.server.sandbox import cgroups
from cfarena.server.sandbox.bubblewrap import (
    MIB,
    SandboxLimits,
    as_bot_user,
    bwrap_options,
    limits_prefix,
    random_uid,
    seccomp_program,
)
from cfarena.server.sandbox.output import CapturedOutput, exit_summary
from cfarena.server.sandbox.shown_paths import named_paths

log = logging.getLogger(__name__)
FORK_SERVER_RUNTIME_MIB = 256


class MatchProcess(abc.ABC):
    """What BotProcess and ForkedProcess share (see the module docstring)."""

    limits: SandboxLimits
    output: CapturedOutput
    breach: str | None
    stopped: bool  # killed by the referee while still running
    on_breach: Callable[[Self, str], None] | None
    _reader: asyncio.Task[None] | None

    @property
    @abc.abstractmethod
    def returncode(self) -> int | None: ...

    @abc.abstractmethod
    def shown(self) -> Sequence[Path] | None:
        """What its sandbox shows besides the system (None: it has none)."""

    @abc.abstractmethod
    def kill(self) -> None: ...

    @abc.abstractmethod
    async def wait(self) -> int | None: ...

    def breached(self: Self, reason: str) -> None:
        """Record the first limit breached and stop the sandbox."""
        if self.breach is None:
            self.breach = reason
            if self.on_breach is not None:
                self.on_breach(self, reason)
        self.kill()

    @property
    def exited_by_itself(self) -> bool:
        """It ended on its own (crashed, or quit) rather than being stopped."""
        return self.returncode is not None and not self.stopped and self.breach is None

    async def stop(self) -> None:
        """Kill it and wait until it (and its output reader) is gone."""
        self.kill()
        await self.wait()
        if self._reader is not None:
            await settle(self._reader, 5.0)

    def exit_summary(self, when: str = "", *, hint: bool = True) -> str:
        """How it ended, in one line (`output.exit_summary`; `when`: " before connecting"),
        with a hint naming what its sandbox shows if a file or module was not found
        (`hint`: for the organiser's terminal and the seat's log; a fault's detail, which
        the web page shows, goes without the host's paths)."""
        shown = self.shown() if hint else None
        return exit_summary(self.breach, self.returncode, self.output, when=when,
                            shown=None if shown is None else named_paths(shown))

    async def _keep_output(self, stream: asyncio.StreamReader, *, limited: bool) -> None:
        """Read `stream` to its end into `output`; past the output limit, a `limited`
        (sandboxed) process is stopped as a breach and the rest is discarded."""
        limit = self.limits.output_mib * MIB
        while chunk := await stream.read(65536):
            if self.output.total > limit:
                continue  # over the limit: the sandbox is being stopped; discard
            self.output.add(chunk)
            if limited and self.output.total > limit:
                self.breached(f"output limit {self.limits.output_mib} MiB exceeded")


@dataclass
class BotProcess(MatchProcess):
    """One bot process for one match, sandboxed (or not, with `sandbox=False`).

    `start()` launches it; `stop()` kills it and everything it started; `breach`
    says which limit it broke, if any; `output` holds what it printed.
    """

    label: str
    command: Sequence[str]
    env: Mapping[str, str]
    socket: Path | None = None
    binds: Sequence[Path] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    sandbox: bool = True
    workdir: Path | None = None
    on_breach: Callable[[BotProcess, str], None] | None = None
    output: CapturedOutput = field(default_factory=CapturedOutput)
    breach: str | None = None
    uid: int = 0
    pid_namespace: str | None = None
    init_pid: int | None = None  # the sandbox's PID 1 (bwrap's init), as the host sees it
    proc: asyncio.subprocess.Process | None = None
    stopped: bool = False  # killed by the referee while still running
    # descriptors the command inherits besides stdin/stdout/stderr (e.g. a fork
    # server's control socket)
    pass_fds: tuple[int, ...] = ()
    # host PIDs the watchdog does not charge to the bot (a fork server and bwrap's
    # init: the runtime, not the bot's own processes)
    exempt_pids: frozenset[int] = frozenset()
    switch_users: bool = False  # a fork server: see `as_bot_user`
    # its cgroups (None: this machine has none for sandboxes, or it is not sandboxed)
    cgroup: cgroups.SandboxCgroup | None = None
    _reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        env = dict(self.env)
        if self.sandbox:
            self.uid = random_uid()
            # a fork server's runtime (the arena's own code) loads before the count of
            # its children starts (`LimitWatch.count_from_now`): room for it meanwhile
            runtime_mib = FORK_SERVER_RUNTIME_MIB if self.switch_users else 0
            self.cgroup = cgroups.create((self.limits.memory_mib + runtime_mib) * MIB,
                                         self.limits.processes + cgroups.RUNTIME_TASKS)
            join = self.cgroup.join_prefix() if self.cgroup is not None else []
            read_fd, write_fd = os.pipe()
            filter_fd = _pipe_with(seccomp_program())
            workdir = str(self.workdir) if self.workdir else "/tmp"
            # with a pids cgroup, that counts processes (and the forks it refuses)
            nproc = self.cgroup is None or not self.cgroup.pids
            command = [*as_bot_user(self.uid, self.switch_users),
                       *limits_prefix(self.limits, nproc=nproc), *self.command]
            argv = bwrap_options(
                binds=self.binds, socket=self.socket, tmp_mib=self.limits.tmp_mib,
                workdir=workdir,
                extra=["--info-fd", str(write_fd), "--seccomp", str(filter_fd)],
            )
            # bwrap's options go through a pipe: the sandbox's /proc/1/cmdline then
            # shows `bwrap --args N` and the command, not the organiser's paths
            args_fd = _pipe_with(b"".join(a.encode() + b"\0" for a in argv[1:]))
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *pdeathsig_prefix(), *join, argv[0], "--args", str(args_fd), *command,
                    env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    pass_fds=(write_fd, filter_fd, args_fd, *self.pass_fds),
                )
            except BaseException:
                os.close(read_fd)
                if self.cgroup is not None:
                    self.cgroup.remove()  # nothing joined them
                raise
            finally:
                for fd in (write_fd, filter_fd, args_fd):
                    os.close(fd)
            self.pid_namespace, self.init_pid = await asyncio.get_running_loop(
                ).run_in_executor(None, _read_child_namespace, read_fd)
        else:
            self.proc = await asyncio.create_subprocess_exec(
                *pdeathsig_prefix(), *self.command, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=str(self.workdir) if self.workdir else None, pass_fds=self.pass_fds,
            )
        self._reader = asyncio.get_running_loop().create_task(self._read_output())

    async def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        # to the end: the pipe is closed with the process
        await self._keep_output(self.proc.stdout, limited=self.sandbox)

    def shown(self) -> Sequence[Path] | None:
        return self.binds if self.sandbox else None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    async def wait(self) -> int | None:
        """Wait until it has exited; its exit code (None if it never started)."""
        if self.proc is None:
            return None
        return await self.proc.wait()

    async def stop(self) -> None:
        """Kill it, wait until it (and its output reader) is gone, remove its cgroups."""
        try:
            await super().stop()
        finally:
            await self._remove_cgroup()

    async def _remove_cgroup(self, wait: float = 2.0) -> None:
        """Remove its cgroups once the last of its processes has left them."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + wait
        while not self.cgroup.remove():
            if time.monotonic() > deadline:
                log.warning("sandbox %s: cgroups %s still hold processes; left in place",
                            self.label, sorted(map(str, self.cgroup.dirs.values())))
                return
            await asyncio.sleep(0.01)
        self.cgroup = None

    def kill(self) -> None:
        """SIGKILL the process group (bwrap takes its PID namespace along)."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            self.stopped = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe holding `data` (written whole, then closed)."""
    read_fd, write_fd = os.pipe()
    try:
        if len(data) > 60_000:  # a pipe holds 64 KiB without a reader
            raise ValueError("too much data for a pipe")
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    return read_fd


# run by the prefix's shell: go on only if the parent is still the referee that forked it
_SAME_PARENT = 'referee=$1; shift; [ "$PPID" = "$referee" ] || exit 125; exec "$@"'


def pdeathsig_prefix() -> list[str]:
    """A command prefix by which the child dies with the referee (this process):
    `setpriv --pdeathsig KILL` (util-linux), then a shell that goes on only if its
    parent is still the referee. The kernel signals a parent's death only to children
    that asked before it, so a referee killed between the fork and setpriv's prctl
    would leave the child running (and its sandbox: 1 of 14 kill -9s of run-tournament
    left a bwrap behind); after the prctl, the check catches that."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return []
    return [setpriv, "--pdeathsig", "KILL", "--",
            "/bin/sh", "-c", _SAME_PARENT, "cfarena-parent", str(os.getpid())]


def _read_child_namespace(fd: int) -> tuple[str | None, int | None]:
    """The PID namespace of bwrap's child and the child's (host) PID, from its
    --info-fd JSON: the child is the sandbox's init, PID 1 inside."""
    with os.fdopen(fd, "rb") as info:
        data = info.read()
    try:
        child = int(json.loads(data)["child-pid"])
        return os.readlink(f"/proc/{child}/ns/pid"), child
    except (ValueError, KeyError, OSError, TypeError):
        return None, None
