"""The limit watchdog: every 100 ms it reads what each live sandbox uses and stops
those over a limit.

Where a sandbox has cgroups (`cgroups`), they say it: memory the kernel cannot
drop (anonymous, tmpfs and kernel memory such as socket buffers), the CPU time
of every process that ever ran, the processes and threads now and the forks
refused. Otherwise /proc does, as well as it can: the resident set of the
sandbox's processes, and the CPU time of its live processes, of what they
reaped and of every process seen at a poll. A poll that cannot read (/proc
when the referee is out of descriptors, a cgroup being removed) counts nothing
that time; the watch goes on.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cfarena.server.own_tasks import settle
from cfarena.server.sandbox.bubblewrap import MIB
from cfarena.server.sandbox.cgroups import RUNTIME_TASKS

if TYPE_CHECKING:
    from cfarena.server.sandbox.bot_process import BotProcess

log = logging.getLogger(__name__)


@dataclass
class _Usage:
    """What /proc shows of one sandbox at one poll."""

    rss_kib: int = 0
    cpu_ticks: int = 0
    tasks: int = 0  # processes and threads, as RLIMIT_NPROC counts them (bwrap's init too)
    own: dict[int, int] = field(default_factory=dict)  # pid -> its own CPU ticks


@dataclass
class _Baseline:
    """What a fork server's runtime used when its current child started (cgroups)."""

    cpu_ns: int = 0
    memory: int = 0
    tasks: int = RUNTIME_TASKS  # bwrap's two processes: a plain sandbox's runtime
    forks_refused: int = 0


class LimitWatch:
    """Reads the memory, CPU time and process count of every live sandbox.

    One task for all sandboxes: every `interval` s it measures each (its cgroups,
    or /proc grouped by PID namespace) and stops any sandbox over a limit.
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
        # per sandbox with cgroups whose count restarted (a fork server's child)
        self._baseline: dict[int, _Baseline] = {}
        self._failing: str | None = None  # why the last poll failed, if it did

    def watch(self, proc: BotProcess) -> None:
        if proc.pid_namespace is None:
            return
        self._watched[proc.pid_namespace] = proc
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def pids_of(self, proc: BotProcess) -> frozenset[int]:
        """The host PIDs now in `proc`'s sandbox (its PID namespace)."""
        found: set[int] = set()
        for pid in _proc_pids():
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") == proc.pid_namespace:
                    found.add(pid)
            except OSError:
                continue
        return frozenset(found)

    def count_from_now(self, proc: BotProcess) -> None:
        """Count `proc`'s CPU time, memory and processes from now on: what its sandbox
        uses now is its runtime's (a fork server, idle: once ready, and before each
        child). With cgroups, the kernel's memory and process limits move up by that
        much; without, the runtime's PIDs are exempt (`exempt_pids`) and its init's
        reaped orphans so far are not counted."""
        self._cpu_seen.pop(id(proc), None)
        self._reaped_base[id(proc)] = _reaped_ticks(proc.init_pid)
        group = proc.cgroup
        if group is None:
            return
        base = _Baseline()
        try:
            if group.cpu:
                base.cpu_ns = group.cpu_ns()
            if group.memory:
                base.memory = max(0, group.memory_in_use())
                group.limit_memory(base.memory + proc.limits.memory_mib * MIB)
            if group.pids:
                base.tasks = group.tasks()
                base.forks_refused = group.forks_refused()
                group.limit_tasks(base.tasks + proc.limits.processes)
        except (OSError, ValueError) as exc:  # the sandbox is going: its cgroups too
            self._failed(f"restarting the count of {proc.label}: {exc}")
        self._baseline[id(proc)] = base

    def forget(self, proc: BotProcess) -> None:
        # only its own entry: a namespace number is reused once its sandbox is gone
        if proc.pid_namespace is not None and self._watched.get(proc.pid_namespace) is proc:
            del self._watched[proc.pid_namespace]
        self._cpu_seen.pop(id(proc), None)
        self._reaped_base.pop(id(proc), None)
        self._baseline.pop(id(proc), None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await settle(self._task, failures=False)

    async def _run(self) -> None:
        while self._watched:
            try:
                self.check()
            except Exception as exc:  # the watch must outlive any one bad poll
                self._failed(f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self.interval)

    def _failed(self, why: str) -> None:
        if self._failing != why:  # once per kind of failure, not every poll
            log.warning("limit watchdog: a poll failed (%s); it goes on", why)
        self._failing = why

    def check(self) -> None:
        """One poll: measure every watched sandbox and stop those over a limit."""
        by_proc = {ns: _Usage() for ns, proc in self._watched.items()
                   if not _counted_by_cgroups(proc)}
        if by_proc:
            try:
                self._scan_proc(by_proc)
            except OSError as exc:  # EMFILE, ENFILE...: nothing learnt this poll
                self._failed(f"reading /proc: {exc}")
                by_proc = {}
        for ns, proc in list(self._watched.items()):
            try:
                reason = self._cgroup_breach(proc) if proc.cgroup is not None else None
            except (OSError, ValueError) as exc:
                self._failed(f"reading cgroups of {proc.label}: {exc}")
                reason = None
            if reason is None and ns in by_proc:
                reason = self._proc_breach(proc, by_proc[ns])
            if reason is not None:
                proc.breached(reason)
                self._watched.pop(ns, None)

    # --------------------------------------------------------------- cgroups
    def _cgroup_breach(self, proc: BotProcess) -> str | None:
        """The limit `proc` breached, by what its cgroups count (None: none, or these
        cgroups do not count it)."""
        group = proc.cgroup
        assert group is not None
        limits = proc.limits
        base = self._baseline.get(id(proc)) or _Baseline()
        if group.memory:
            # a process that waits at the kernel's limit (the limit and some headroom)
            # holds more than the limit too: the kernel drops file cache before that
            allowed = base.memory + limits.memory_mib * MIB
            charged = group.memory_charged()  # an upper bound: memory.stat only if over
            if charged > allowed and group.memory_in_use(charged) > allowed:
                return f"memory limit {limits.memory_mib} MiB exceeded"
        if group.cpu and group.cpu_ns() - base.cpu_ns > limits.cpu_seconds * 1_000_000_000:
            return f"CPU time limit {limits.cpu_seconds} s exceeded"
        if group.pids and (group.forks_refused() > base.forks_refused
                           or group.tasks() - base.tasks >= limits.processes):
            return f"process limit {limits.processes} reached"
        return None

    # ------------------------------------------------------------------ /proc
    def _scan_proc(self, usage: dict[str, _Usage]) -> None:
        """Add up what /proc shows of each sandbox in `usage` (by PID namespace)."""
        for pid in _proc_pids():
            try:
                ns = os.readlink(f"/proc/{pid}/ns/pid")
                found = usage.get(ns)
                if found is None:
                    continue
                with open(f"/proc/{pid}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                threads, own = int(fields[17]), int(fields[11]) + int(fields[12])
                reaped, rss_pages = int(fields[13]) + int(fields[14]), int(fields[21])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            found.tasks += threads  # field 20: num_threads
            watched = self._watched[ns]
            if pid in watched.exempt_pids:
                # the runtime's memory and CPU are not the bot's; but the orphans that
                # init reaped (unseen, perhaps) are
                if pid == watched.init_pid:
                    found.cpu_ticks += max(0, reaped - self._reaped_base.get(id(watched), 0))
                continue
            # fields[0] is field 3 (state): utime=14, stime=15, cutime=16, cstime=17, rss=24
            found.cpu_ticks += own + reaped
            found.own[pid] = own
            found.rss_kib += rss_pages * self._page_kib

    def _proc_breach(self, proc: BotProcess, seen: _Usage) -> str | None:
        """The limit `proc` breached, by what /proc showed (what its cgroups, if it has
        some, do not count)."""
        if seen.tasks == 0:
            return None
        group = proc.cgroup
        limits = proc.limits
        ever = self._cpu_seen.setdefault(id(proc), {})
        for pid, ticks in seen.own.items():
            ever[pid] = max(ever.get(pid, 0), ticks)
        # both are lower bounds of what the sandbox used: reaped children are in
        # their parent's cutime, and every process ever seen is in `ever`
        seen.cpu_ticks = max(seen.cpu_ticks, sum(ever.values()))
        if (group is None or not group.memory) and seen.rss_kib > limits.memory_mib * 1024:
            return f"memory limit {limits.memory_mib} MiB exceeded"
        if (group is None or not group.cpu) and \
                seen.cpu_ticks / self._ticks > limits.cpu_seconds:
            return f"CPU time limit {limits.cpu_seconds} s exceeded"
        if (group is None or not group.pids) and seen.tasks > limits.processes:
            # bwrap's init is one of them. RLIMIT_NPROC counts threads too: the bot's
            # uid is at its limit and its next fork (or thread) fails
            return f"process limit {limits.processes} reached"
        return None


def _counted_by_cgroups(proc: BotProcess) -> bool:
    group = proc.cgroup
    return group is not None and group.memory and group.cpu and group.pids


def _proc_pids() -> list[int]:
    """The PIDs in /proc now (OSError if /proc cannot be listed, e.g. EMFILE)."""
    with os.scandir("/proc") as entries:
        return [int(e.name) for e in entries if e.name.isdigit()]


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
