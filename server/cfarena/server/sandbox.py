"""Bot processes in a bubblewrap sandbox, with limits, captured output and a watchdog.

A sandbox is `bwrap` (bubblewrap, Debian package `bubblewrap`) with its own PID,
network, IPC, UTS and mount namespaces, showing the bot read-only only what it
needs to run (system directories, the Python it runs on, the paths named on its
command line and the organiser's extra binds), a private size-capped `/tmp`
that vanishes with it, and the referee's Unix socket at `/run/cfarena/arena.sock`
(there is no network: the loopback of an empty network namespace only). Inside,
the bot runs as an unprivileged user: as root, a fresh random uid per sandbox
(`setpriv`, no capabilities, no new privileges); otherwise uid 65534 of a user
namespace. Its environment is built from an allow-list, never copied from the
referee's.

Limits: processes (RLIMIT_NPROC, per sandbox), CPU seconds and memory (resident
set of all the sandbox's processes, polled by `LimitWatch`, with RLIMIT_CPU and a
generous RLIMIT_AS as backstops between polls), bytes of output and of `/tmp`.
A limit breached stops the whole sandbox and is reported as one line, e.g.
"memory limit 512 MiB exceeded". The sandbox dies with its match: `stop()`
SIGKILLs bwrap's process group, and bwrap's `--die-with-parent` takes the
PID namespace (and so every process in it) along.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SOCKET_IN_SANDBOX = "/run/cfarena/arena.sock"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# files of /etc that programs commonly need; nothing else of /etc is shown
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf",
              "passwd", "group", "alternatives", "ssl", "mime.types", "java-17-openjdk")
_MIB = 1024 * 1024
# RLIMIT_AS is a backstop against allocations faster than the watchdog's poll:
# address space is far larger than resident memory (thread stacks, arenas)
_ADDRESS_SPACE_SLACK = 4096 * _MIB
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`), or pass "
                "--no-sandbox to run trusted bots unsandboxed")


class SandboxUnavailable(Exception):
    """Sandboxes cannot be created on this machine (the message says why and what to do)."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one bot process (and everything it starts) may use during one match."""

    memory_mib: int = 512
    cpu_seconds: int = 300
    processes: int = 64
    output_mib: int = 16
    tmp_mib: int = 64

    def describe(self) -> str:
        return (f"memory {self.memory_mib} MiB, CPU {self.cpu_seconds} s, "
                f"{self.processes} processes, output {self.output_mib} MiB, "
                f"/tmp {self.tmp_mib} MiB")


def sandbox_problem() -> str | None:
    """Why sandboxes cannot be created here (one line), or None if they can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"no sandbox: bwrap not found; {INSTALL_HINT}"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "no sandbox: setpriv (util-linux) not found; install util-linux"
    try:
        seccomp_program()
    except (ImportError, OSError, RuntimeError) as exc:
        return (f"no sandbox: cannot build the seccomp filter ({exc}); install libseccomp "
                "(Debian/Ubuntu: `apt-get install libseccomp2`)")
    probe = [*_bwrap_options(binds=[], socket=None, tmp_mib=1, extra=[]),
             *_as_bot_user(random_uid()), "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no sandbox: bwrap does not run ({exc}); {INSTALL_HINT}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return (f"no sandbox: bwrap cannot create namespaces here "
                f"({why[-1] if why else 'exit ' + str(done.returncode)}); {INSTALL_HINT}")
    return None


def python_paths() -> list[Path]:
    """What this interpreter needs to run: its prefixes and every import path that exists."""
    found: list[Path] = []
    for entry in (sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"],
                  *sys.path):
        if entry and os.path.isabs(entry) and os.path.exists(entry):
            found.append(Path(entry))
    exe = Path(sys.executable)
    found.append(exe.parent)
    with contextlib.suppress(OSError):
        found.append(exe.resolve().parent.parent)
    return found


def command_paths(argv: Sequence[str], cwd: Path) -> list[Path]:
    """Files and directories named on a bot's command line (relative to `cwd`).

    Each argument (and the value of a `--flag=VALUE` argument) that names an
    existing path is shown to the sandbox read-only; so is the program itself
    when it is given as a path.
    """
    paths: list[Path] = []
    for index, arg in enumerate(argv):
        for part in (arg, arg.partition("=")[2]) if index else (arg,):
            if not part or (index == 0 and "/" not in part):
                continue
            candidate = Path(part) if os.path.isabs(part) else cwd / part
            with contextlib.suppress(OSError):
                if candidate.exists():
                    paths.append(candidate.resolve())
    return paths


def random_uid() -> int:
    # far above any uid a system allocates; one per sandbox, so RLIMIT_NPROC
    # counts only that sandbox's processes and nothing else runs under it
    return 1_000_000 + secrets.randbelow(1 << 30)


def _dirs_for(dest: str, made: set[str]) -> list[str]:
    """bwrap arguments creating every missing parent of `dest` world-readable."""
    out: list[str] = []
    parts = dest.strip("/").split("/")
    for i in range(1, len(parts)):
        parent = "/" + "/".join(parts[:i])
        if parent not in made:
            made.add(parent)
            out += ["--perms", "0755", "--dir", parent]
    return out


def shown_roots(binds: Iterable[Path]) -> list[str]:
    """Every host directory or file a sandbox with these binds can read (resolved)."""
    roots = [os.path.realpath(d) for d in _SYSTEM_DIRS if os.path.exists(d)]
    roots += [os.path.realpath(f"/etc/{name}") for name in _ETC_FILES
              if os.path.lexists(f"/etc/{name}")]
    return roots + [os.path.realpath(p) for p in binds]


def exposed(binds: Iterable[Path], secrets_: Iterable[Path]) -> tuple[str, str] | None:
    """(secret, shown root) for the first secret a sandbox with these binds could read.

    The organiser's database and log directory must lie outside everything a bot is
    shown; rather than mask them inside a shown directory (which misses files created
    later and paths reached through another name), the run refuses to start.
    """
    roots = shown_roots(binds)
    for secret in secrets_:
        real = os.path.realpath(secret)
        for root in roots:
            if real == root or real.startswith(root.rstrip("/") + "/") or \
                    root.startswith(real.rstrip("/") + "/"):
                return str(secret), root
    return None


@functools.cache
def seccomp_program() -> bytes:
    """The sandbox's seccomp filter (BPF, built with libseccomp): everything is allowed
    but what would let a bot keep or pass data past its sandbox or escape its limits.

    - the kernel keyring (`add_key`, `keyctl`, `request_key`): keys outlive a process
      and are visible to other sandboxes through /proc/keys;
    - new namespaces (`unshare`, `clone` with CLONE_NEWUSER, `clone3`, whose flags a
      filter cannot read; glibc falls back to `clone`): a nested PID namespace
      hides its processes from the limit watchdog;
    - `memfd_create`: memory no process maps is in nobody's resident set;
    - POSIX message queues (`mq_open`): they outlive processes, and a process cannot
      list them without mounting their filesystem.
    """
    import pyseccomp as sc  # libseccomp through ctypes

    program = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in ("add_key", "keyctl", "request_key", "unshare", "setns", "mq_open"):
        program.add_rule(sc.ERRNO(errno.EPERM), name)
    program.add_rule(sc.ERRNO(errno.EPERM), "clone",
                     sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
    for name in ("clone3", "memfd_create"):
        program.add_rule(sc.ERRNO(errno.ENOSYS), name)
    with tempfile.TemporaryFile() as out:
        program.export_bpf(out)
        out.seek(0)
        return out.read()


_CLONE_NEWUSER = 0x10000000


def _bwrap_options(*, binds: Iterable[Path], socket: Path | None, tmp_mib: int,
                   extra: Sequence[str], workdir: str = "/tmp") -> list[str]:
    """`bwrap` and its options (the command, run as the bot's user, follows them)."""
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--hostname", "cfarena-bot"]
    root = os.geteuid() == 0
    if not root:
        argv += ["--unshare-user", "--disable-userns", "--uid", "65534", "--gid", "65534"]
    made: set[str] = {"/usr", "/tmp", "/proc", "/dev", "/run"}
    # first the private /tmp, so that bound paths below /tmp lie on top of it
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(tmp_mib * _MIB), "--perms", "1777", "--tmpfs", "/tmp",
             "--size", str(tmp_mib * _MIB), "--perms", "1777", "--tmpfs", "/dev/shm"]
    for system in _SYSTEM_DIRS:
        if os.path.islink(system):
            argv += ["--symlink", os.readlink(system), system]
            made.add(system)
        elif os.path.isdir(system):
            argv += ["--ro-bind", system, system]
            made.add(system)
    for name in _ETC_FILES:
        path = f"/etc/{name}"
        if os.path.lexists(path):
            argv += [*_dirs_for(path, made), "--ro-bind", path, path]
    seen: set[str] = set()
    # resolved, so that what is shown is exactly what `exposed` checked
    for path in sorted({os.path.realpath(p) for p in binds}, key=len):
        if any(path == s or path.startswith(s.rstrip("/") + "/") for s in seen):
            continue  # inside a directory already shown
        if any(path == d or path.startswith(d + "/") for d in _SYSTEM_DIRS if d in made):
            continue
        seen.add(path)
        argv += [*_dirs_for(path, made), "--ro-bind", path, path]
    if not any(workdir == s or workdir.startswith(s.rstrip("/") + "/") for s in seen) \
            and workdir not in made:
        argv += [*_dirs_for(workdir, made), "--perms", "0755", "--dir", workdir]
    argv += ["--perms", "0755", "--dir", "/run", "--perms", "0755", "--dir", "/run/cfarena"]
    if socket is not None:
        argv += ["--bind", str(socket), SOCKET_IN_SANDBOX]
    return [*argv, "--chdir", workdir, *extra]


def _as_bot_user(uid: int, switch_users: bool = False) -> list[str]:
    """As root, the command runs as `uid` with no capabilities (else bwrap's user
    namespace has already made it uid 65534). A fork server (`switch_users`) keeps
    CAP_SETUID and CAP_SETGID, and nothing else, to give each child a user of its own."""
    if os.geteuid() != 0:
        return []
    caps = "-all,+setuid,+setgid" if switch_users else "-all"
    ambient = [f"--ambient-caps={caps}"] if switch_users else []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            f"--inh-caps={caps}", *ambient, f"--bounding-set={caps}", "--no-new-privs", "--"]


def _limits_prefix(limits: SandboxLimits) -> list[str]:
    """`prlimit` run inside the sandbox, as the bot's user, before the bot starts."""
    address_space = limits.memory_mib * _MIB + _ADDRESS_SPACE_SLACK
    # the kernel's CPU limit lies a little above the watchdog's, so that the watchdog
    # stops the sandbox first and the fault says why
    return ["prlimit", f"--nproc={limits.processes}", f"--cpu={limits.cpu_seconds + 5}",
            f"--as={address_space}", f"--fsize={limits.tmp_mib * _MIB}", "--core=0", "--"]


@dataclass
class CapturedOutput:
    """A bot's stdout+stderr: the first and last bytes kept, the rest counted."""

    keep_bytes: int = 64 * 1024
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes * 3 // 4 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            over = len(self.tail) - self.keep_bytes // 4
            if over > 0:
                del self.tail[:over]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {dropped} bytes not kept ...]\n" if dropped > 0 else ""
        return (bytes(self.head).decode(errors="replace") + middle
                + bytes(self.tail).decode(errors="replace"))

    def last_line(self) -> str:
        """The last line of output that is not a gRPC/absl runtime log line."""
        lines = [ln for ln in self.text().splitlines() if ln.strip()]
        own = [ln for ln in lines if not _is_runtime_log(ln)]
        return printable((own or lines or [""])[-1][:200])


def printable(text: str) -> str:
    """`text` with control characters (terminal escapes among them) shown as \\xNN:
    a bot's words are quoted to the organiser's terminal and stored."""
    return "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in text)


def _is_runtime_log(line: str) -> bool:
    head = line[:16]
    return (len(head) > 5 and head[0] in "IWEF" and head[1:5].isdigit() and head[5] == " ") \
        or line.startswith("WARNING: All log messages before absl")


@dataclass
class BotProcess:
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
    switch_users: bool = False  # a fork server: see `_as_bot_user`
    _reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        env = dict(self.env)
        if self.sandbox:
            self.uid = random_uid()
            read_fd, write_fd = os.pipe()
            filter_fd = _pipe_with(seccomp_program())
            workdir = str(self.workdir) if self.workdir else "/tmp"
            command = [*_as_bot_user(self.uid, self.switch_users),
                       *_limits_prefix(self.limits), *self.command]
            argv = _bwrap_options(
                binds=self.binds, socket=self.socket, tmp_mib=self.limits.tmp_mib,
                workdir=workdir,
                extra=["--info-fd", str(write_fd), "--seccomp", str(filter_fd)],
            )
            # bwrap's options go through a pipe: the sandbox's /proc/1/cmdline then
            # shows `bwrap --args N` and the command, not the organiser's paths
            args_fd = _pipe_with(b"".join(a.encode() + b"\0" for a in argv[1:]))
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *pdeathsig_prefix(), argv[0], "--args", str(args_fd), *command, env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    pass_fds=(write_fd, filter_fd, args_fd, *self.pass_fds),
                )
            except BaseException:
                os.close(read_fd)
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
        limit = self.limits.output_mib * _MIB
        while True:
            chunk = await self.proc.stdout.read(65536)
            if not chunk:
                return  # read to the end: the pipe is closed with the process
            if self.output.total > limit:
                continue  # over the limit: the sandbox is being stopped; discard
            self.output.add(chunk)
            if self.sandbox and self.output.total > limit:
                self.breached(f"output limit {self.limits.output_mib} MiB exceeded")

    def breached(self, reason: str) -> None:
        """Record the first limit breached and stop the sandbox."""
        if self.breach is None:
            self.breach = reason
            if self.on_breach is not None:
                self.on_breach(self, reason)
        self.kill()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    @property
    def exited_by_itself(self) -> bool:
        """It ended on its own (crashed, or quit) rather than being stopped."""
        return self.returncode is not None and not self.stopped and self.breach is None

    async def wait(self) -> int | None:
        """Wait until it has exited; its exit code (None if it never started)."""
        if self.proc is None:
            return None
        return await self.proc.wait()

    def kill(self) -> None:
        """SIGKILL the process group (bwrap takes its PID namespace along)."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            self.stopped = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    async def stop(self) -> None:
        """Kill it and wait until it (and its output reader) is gone."""
        self.kill()
        if self.proc is not None:
            await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 5.0)

    def exit_summary(self) -> str:
        return exit_summary(self.breach, self.returncode, self.output)


def exit_summary(breach: str | None, code: int | None, output: CapturedOutput) -> str:
    """"exited with code 3: <last line>" / "killed by SIGKILL" / the breach."""
    if breach:
        return breach
    if code is None:
        return "still running"
    what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    last = output.last_line()
    return f"{what}: {last}" if last else what


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


def pdeathsig_prefix() -> list[str]:
    """`setpriv --pdeathsig KILL --`: the child dies with the referee (util-linux)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


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
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

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
