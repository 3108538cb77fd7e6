"""The limit watchdog: polls /proc for what every live sandbox uses and stops those over a limit."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cfarena.server.settle import settle

if TYPE_CHECKING:
    from cfarena.server.sandbox.bot_process import BotProcess


@dataclass
class _Usage:
    rss_kib: int = 0
    cpu_ticks: int = 0
    tasks: int = 0  # processes and threads, as RLIMIT_NPROC counts them (bwrap's init too)
    own: dict[int, int] = field(default_factory=dict)  # pid -> its own CPU ticks


class LimitWatch:
    """Polls /proc for the memory, CPU time and process count of every live sandbox.

    One task for all sandboxes: every `interval` s it groups the machine's
    processes by PID namespace and stops any sandbox over a limit.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._watched: dict[str, BotProcess] = {}
        self._task: asyncio.Task[None] | None = None
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
        # per sandbox: pid -> the most CPU ticks it was seen with, so that a child
        # reaped unseen by its parent (SIGCHLD ignored) still counts what it used
        self._cpu_seen: dict[int, dict[int, int]] = {}
        # per sandbox with exempt PIDs: its init's reaped CPU when the count (re)started
        self._reaped_base: dict[int, int] = {}

    def watch(self, proc: BotProcess) -> None:
        if proc.pid_namespace is None:
            return
        self._watched[proc.pid_namespace] = proc
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def pids_of(self, proc: BotProcess) -> frozenset[int]:
        """The host PIDs now in `proc`'s sandbox (its PID namespace)."""
        found: set[int] = set()
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry.name}/ns/pid") == proc.pid_namespace:
                        found.add(int(entry.name))
        return frozenset(found)

    def restart_cpu(self, proc: BotProcess) -> None:
        """Count `proc`'s CPU time afresh (a fork server's next child starts): what its
        processes used so far, and its init's reaped orphans so far, are not counted."""
        self._cpu_seen.pop(id(proc), None)
        self._reaped_base[id(proc)] = _reaped_ticks(proc.init_pid)

    def forget(self, proc: BotProcess) -> None:
        # only its own entry: a namespace number is reused once its sandbox is gone
        if proc.pid_namespace is not None and self._watched.get(proc.pid_namespace) is proc:
            del self._watched[proc.pid_namespace]
        self._cpu_seen.pop(id(proc), None)
        self._reaped_base.pop(id(proc), None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await settle(self._task, failures=False)

    async def _run(self) -> None:
        while self._watched:
            self.check()
            await asyncio.sleep(self.interval)

    def check(self) -> None:
        """One poll: measure every watched sandbox and stop those over a limit."""
        usage = {ns: _Usage() for ns in self._watched}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                ns = os.readlink(f"/proc/{entry.name}/ns/pid")
                found = usage.get(ns)
                if found is None:
                    continue
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            found.tasks += int(fields[17])  # field 20: num_threads
            watched = self._watched[ns]
            if int(entry.name) in watched.exempt_pids:
                # the runtime's memory and CPU are not the bot's; but the orphans that
                # init reaped (unseen, perhaps) are
                if int(entry.name) == watched.init_pid:
                    reaped = int(fields[13]) + int(fields[14])
                    found.cpu_ticks += max(0, reaped - self._reaped_base.get(id(watched), 0))
                continue
            # fields[0] is field 3 (state): utime=14, stime=15, cutime=16, cstime=17, rss=24
            own = int(fields[11]) + int(fields[12])
            found.cpu_ticks += own + int(fields[13]) + int(fields[14])
            found.own[int(entry.name)] = own
            found.rss_kib += int(fields[21]) * self._page_kib
        for ns, seen in usage.items():
            proc = self._watched.get(ns)
            if proc is None or seen.tasks == 0:
                continue
            limits = proc.limits
            ever = self._cpu_seen.setdefault(id(proc), {})
            for pid, ticks in seen.own.items():
                ever[pid] = max(ever.get(pid, 0), ticks)
            # both are lower bounds of what the sandbox used: reaped children are in
            # their parent's cutime, and every process ever seen is in `ever`
            seen.cpu_ticks = max(seen.cpu_ticks, sum(ever.values()))
            if seen.rss_kib > limits.memory_mib * 1024:
                proc.breached(f"memory limit {limits.memory_mib} MiB exceeded")
            elif seen.cpu_ticks / self._ticks > limits.cpu_seconds:
                proc.breached(f"CPU time limit {limits.cpu_seconds} s exceeded")
            elif seen.tasks > limits.processes:  # bwrap's init is one of them
                # RLIMIT_NPROC counts threads too: the bot's uid is at its limit and
                # its next fork (or thread) fails
                proc.breached(f"process limit {limits.processes} reached")
            if proc.breach:
                self._watched.pop(ns, None)


def _reaped_ticks(pid: int | None) -> int:
    """cutime + cstime of `pid`: the CPU of the children it reaped (0 if unknown)."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[13]) + int(fields[14])
    except (OSError, IndexError, ValueError):
        return 0
