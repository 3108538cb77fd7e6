"""A cgroup per sandbox: the kernel counts (and bounds) a bot's memory, processes and CPU.

The /proc watchdog sees only what processes show: resident pages, the CPU time
of processes alive at a poll (and what their parents reaped). Memory a bot
parks in the kernel (socket buffers, pipes, pages of its tmpfs `/tmp` and
`/dev/shm`) is nobody's resident set, and a child that lives less than a poll
with SIGCHLD ignored leaves no trace. A cgroup is charged for all of it.

Each sandbox gets one cgroup in each of three cgroup v1 controllers:
- memory: `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`, where swap is
  accounted) is the limit plus `headroom()`, with the kernel's OOM killer off
  (`memory.oom_control`): a process that reaches it waits (a page fault) or its
  system call fails (ENOMEM, ENOBUFS), and nothing dies before the watchdog has
  said why. The watchdog compares the charge less the file cache the kernel can
  drop (`memory_in_use`) with the limit itself, so it names the breach first;
- pids: `pids.max` (processes and threads, the sandbox's runtime among them): a
  fork beyond it fails with EAGAIN, and `pids.events` counts the refusals;
- cpuacct: `cpuacct.usage`, the CPU time of every process that ever ran in the
  cgroup, however short its life.

A sandbox joins its cgroups before it can fork: `join_prefix()` is a `/bin/sh`
that writes its own PID to each `cgroup.procs` and then execs bwrap. That needs
nothing but a shell (cgroup-tools' `cgexec` would do the same as another package
to install), runs nothing of the referee between fork and exec (Python's
`preexec_fn` would, and is unsafe in a process with threads), and the bot's
user cannot leave the cgroups: it has no capabilities and `/sys` is not shown.

The cgroups of one referee process live below a parent of its own,
`<the referee's cgroup>/cfarena-<pid>-<start time>-<PID namespace>` in each controller: nested
in the referee's own cgroup, so that whatever bounds the referee (a service
manager's limit) bounds its bots too, and named so that leftovers can be told
apart. A sandbox's cgroups are removed when it is stopped (`remove`), the parent
when the referee exits. Whatever a referee that died leaves in them (a sandbox
that bwrap was setting up when it died: see `keeper`) is killed, and the cgroups
removed, by the referee's keeper, a process that outlives it for that alone; or,
were the keeper gone too, by the next referee that starts in the same PID namespace
(a parent whose referee is gone: no process with that PID and start time there).

Where cgroups cannot be used (not root, a controller missing or read-only,
cgroup v2 only: not supported yet, or `CFARENA_CGROUPS=off` in the environment)
sandboxes still run, and the /proc watchdog does all the counting;
`available()` says in one line which defences hold, `defences()` the same as a
dict for the stored tournament.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cfarena.server.sandbox import keeper
from cfarena.server.sandbox.host_reset import CGROUPS_ENV, turned_off

CONTROLLERS = ("memory", "pids", "cpuacct")
# the processes of a sandbox that are not the bot's: bwrap as the referee started
# it and bwrap's init (PID 1 inside); pids.max = the bot's processes + these
RUNTIME_TASKS = 2
MIB = 1024 * 1024
# shell run before bwrap: join each cgroup named before "--", then exec the rest
_JOIN = 'for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; done; exec "$@"'
_names = itertools.count(1)
# the keeper of this referee's cgroups (started with them; it outlives the referee)
_keepers: list[subprocess.Popen[bytes]] = []


def headroom(limit_bytes: int) -> int:
    """What the kernel's hard memory limit lies above the watchdog's: room for one
    poll's worth of allocation, so that the watchdog, not the kernel, stops a bot."""
    return max(32 * MIB, limit_bytes // 8)


@dataclass(frozen=True, slots=True)
class Support:
    """Which controllers this machine gives sandboxes (their parent directories), and
    why the others are missing."""

    parents: dict[str, Path]
    missing: str  # "" when every controller is there

    def line(self) -> str:
        if not self.parents:
            return f"kernel limits: none ({self.missing}); the /proc watchdog counts alone"
        held = ", ".join(f"{c} cgroup" for c in CONTROLLERS if c in self.parents)
        lacking = f"; not {self.missing}" if self.missing else ""
        return f"kernel limits: {held} per sandbox (cgroup v1){lacking}"


def available() -> str:
    """One line saying which kernel defences hold on this machine."""
    return _support().line()


def defences() -> dict[str, bool]:
    """Which kernel defences hold here, for the stored tournament: {"memory_cgroup":
    memory incl. kernel memory, "pids_cgroup": processes, "cpu_cgroup": CPU time of
    every process}."""
    parents = _support().parents
    return {"memory_cgroup": "memory" in parents, "pids_cgroup": "pids" in parents,
            "cpu_cgroup": "cpuacct" in parents}


class SandboxCgroup:
    """The cgroups of one sandbox, one directory per controller that this machine has."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs
        self._swap: bool | None = None  # whether swap is accounted (memory.memsw.*)

    @property
    def swap(self) -> bool:
        if self._swap is None:
            self._swap = (self.dirs["memory"] / "memory.memsw.limit_in_bytes").exists()
        return self._swap

    @property
    def memory(self) -> bool:
        return "memory" in self.dirs

    @property
    def pids(self) -> bool:
        return "pids" in self.dirs

    @property
    def cpu(self) -> bool:
        return "cpuacct" in self.dirs

    def join_prefix(self) -> list[str]:
        """A command prefix that moves itself into these cgroups, then execs the rest."""
        procs = [str(d / "cgroup.procs") for d in self.dirs.values()]
        return ["/bin/sh", "-c", _JOIN, "cfarena-join", *procs, "--"]

    def limit_memory(self, limit_bytes: int) -> None:
        """The kernel's hard limit: `limit_bytes` (plus headroom), swap included, with the
        OOM killer off (a process at the limit waits, or its allocation fails)."""
        if not self.memory:
            return
        d = self.dirs["memory"]
        hard = str(limit_bytes + headroom(limit_bytes))
        memsw = d / "memory.memsw.limit_in_bytes"
        # memsw may never be below the plain limit: order the writes accordingly
        lowering = self.swap and int(_read(d / "memory.limit_in_bytes")) > int(hard)
        if self.swap and not lowering:
            memsw.write_text(hard)
        (d / "memory.limit_in_bytes").write_text(hard)
        if lowering:
            memsw.write_text(hard)
        (d / "memory.oom_control").write_text("1")

    def limit_tasks(self, count: int) -> None:
        if self.pids:
            (self.dirs["pids"] / "pids.max").write_text(str(count))

    def memory_charged(self) -> int:
        """Bytes charged (swap included), the file cache the kernel can drop among them."""
        d = self.dirs["memory"]
        return int(_read(d / ("memory.memsw.usage_in_bytes" if self.swap
                              else "memory.usage_in_bytes")))

    def memory_in_use(self, charged: int | None = None) -> int:
        """Bytes charged less the file cache the kernel can drop: the bot's anonymous
        memory, tmpfs pages and kernel memory (socket buffers, pipes...)."""
        if charged is None:
            charged = self.memory_charged()
        stat = _fields(self.dirs["memory"] / "memory.stat")
        return charged - stat.get("total_inactive_file", 0) - stat.get("total_active_file", 0)

    def cpu_ns(self) -> int:
        """CPU time of every process that ever ran here, in nanoseconds."""
        return int(_read(self.dirs["cpuacct"] / "cpuacct.usage"))

    def tasks(self) -> int:
        """Processes and threads here now."""
        return int(_read(self.dirs["pids"] / "pids.current"))

    def forks_refused(self) -> int:
        """Forks (and new threads) refused at pids.max so far."""
        return _fields(self.dirs["pids"] / "pids.events").get("max", 0)

    def remove(self) -> bool:
        """Remove the cgroups that hold no process any more; whether all are gone (a
        cgroup whose last processes are still exiting stays: try again shortly)."""
        for name, d in list(self.dirs.items()):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # EBUSY: a process still in it
            del self.dirs[name]
        return not self.dirs


def create(limit_bytes: int, tasks: int) -> SandboxCgroup | None:
    """New cgroups for one sandbox with its limits set (None where the machine has no
    cgroups for sandboxes). OSError if they cannot be made now (e.g. out of memory)."""
    parents = _support().parents
    if not parents:
        return None
    name = f"sandbox-{next(_names)}"
    group = SandboxCgroup({})
    try:
        for controller, parent in parents.items():
            d = parent / name
            d.mkdir()
            group.dirs[controller] = d
        group.limit_memory(limit_bytes)
        group.limit_tasks(tasks)
    except BaseException:
        group.remove()
        raise
    return group


# ------------------------------------------------------------ the machine
@functools.cache
def _support() -> Support:
    """The parent directory of each controller for this referee (made once, removed at
    exit), after removing those of referees that are gone."""
    if turned_off(CGROUPS_ENV):
        return Support({}, f"turned off by {CGROUPS_ENV}")
    if os.geteuid() != 0:
        return Support({}, "the arena does not run as root")
    mounts = _v1_mounts()
    if not mounts:
        if _is_v2():
            return Support({}, "cgroup v2 only: not supported yet")
        return Support({}, "no cgroup v1 controllers mounted")
    own = _own_cgroups()
    me = _referee_name(os.getpid())
    parents: dict[str, Path] = {}
    problems: list[str] = []
    for controller in CONTROLLERS:
        if controller not in mounts or controller not in own:
            problems.append(f"{controller} (not mounted)")
            continue
        mine = mounts[controller] / own[controller].lstrip("/")
        _remove_stale(mine)
        parent = mine / me
        try:
            parent.mkdir(exist_ok=True)
            if controller == "memory":
                # a probe: a sandbox's memory limit must be writable below it
                probe = parent / "probe"
                probe.mkdir(exist_ok=True)
                try:
                    (probe / "memory.oom_control").write_text("1")
                finally:
                    probe.rmdir()
        except OSError as exc:
            problems.append(f"{controller} ({exc.strerror or exc})")
            with contextlib.suppress(OSError):
                parent.rmdir()
            continue
        parents[controller] = parent
    if parents:
        atexit.register(_remove_parents, list(parents.values()))
        # (a keeper told no start time would take the referee for gone at once)
        if keeper.start_time(os.getpid()) is not None:
            _keepers.append(keeper.start(list(parents.values())))
    return Support(parents, ", ".join(problems))


def _v1_mounts() -> dict[str, Path]:
    """Where each cgroup v1 controller is mounted (the root of its hierarchy)."""
    found: dict[str, Path] = {}
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            sep = fields.index("-")
            fstype, options = fields[sep + 1], fields[sep + 3].split(",")
            if fstype == "cgroup" and fields[3] == "/":
                for controller in CONTROLLERS:
                    if controller in options:
                        found.setdefault(controller, Path(fields[4]))
    return found


def _is_v2() -> bool:
    return Path("/sys/fs/cgroup/cgroup.controllers").exists()


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup in each v1 controller (from /proc/self/cgroup)."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as cgroups:
        for line in cgroups:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    return own


def _pid_namespace() -> str:
    """This process's PID namespace (its inode): PIDs name processes only within it."""
    return str(os.stat("/proc/self/ns/pid").st_ino)


def _referee_name(pid: int) -> str:
    return f"cfarena-{pid}-{keeper.start_time(pid)}-{_pid_namespace()}"


def _remove_stale(mine: Path) -> None:
    """Remove the parents (and their sandboxes' cgroups) of referees that are gone: no
    process has their PID and start time in this PID namespace. What still runs in them
    is killed first. A parent of a referee in another PID namespace (another container
    sharing the cgroup) is left alone: whether it runs cannot be told from here."""
    with contextlib.suppress(OSError):
        for entry in mine.iterdir():
            parts = entry.name.split("-")
            if len(parts) != 4 or parts[0] != "cfarena" or not parts[1].isdigit():
                continue
            if parts[3] != _pid_namespace():
                continue  # another PID namespace's referee
            if keeper.start_time(int(parts[1])) == parts[2]:
                continue  # that referee runs
            keeper.sweep(entry, seconds=1.0)


def _remove_parents(parents: list[Path]) -> None:
    for parent in parents:
        with contextlib.suppress(OSError):
            for child in parent.iterdir():
                if child.is_dir():
                    with contextlib.suppress(OSError):
                        child.rmdir()
            parent.rmdir()


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read().strip()


def _fields(path: Path) -> dict[str, int]:
    """A cgroup file of `name value` lines (memory.stat, memory.oom_control, pids.events)."""
    out: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[name] = int(value)
    return out
