"""The bubblewrap command line of a sandbox: namespaces, what it shows, seccomp, limits.

`bwrap_options` builds bwrap's options; `as_bot_user` and `limits_prefix` are
the commands run inside it before the bot (its user, its rlimits);
`sandbox_problem` says why sandboxes cannot be created here, if they cannot.
What a sandbox shows of the host is checked by `shown_paths`.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfarena.server.sandbox import host_counters

SOCKET_IN_SANDBOX = "/run/cfarena/arena.sock"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# files of /etc that programs commonly need; nothing else of /etc is shown
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf",
             "passwd", "group", "alternatives", "ssl", "mime.types", "java-17-openjdk")
MIB = 1024 * 1024
# RLIMIT_AS is a backstop against allocations faster than the watchdog's poll:
# address space is far larger than resident memory (thread stacks, arenas)
_ADDRESS_SPACE_SLACK = 4096 * MIB
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
    # open descriptors per process (RLIMIT_NOFILE); a Python SDK bot uses about 20
    files: int = 256

    def describe(self) -> str:
        return (f"memory {self.memory_mib} MiB, CPU {self.cpu_seconds} s, "
                f"{self.processes} processes, {self.files} open files, "
                f"output {self.output_mib} MiB, /tmp {self.tmp_mib} MiB")


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
    probe = [*bwrap_options(binds=[], socket=None, tmp_mib=1, extra=[]),
             *as_bot_user(random_uid()), "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no sandbox: bwrap does not run ({exc}); {INSTALL_HINT}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return (f"no sandbox: bwrap cannot create namespaces here "
                f"({why[-1] if why else 'exit ' + str(done.returncode)}); {INSTALL_HINT}")
    return None


# the least uid of a sandbox (as root): far above any uid a system allocates
SANDBOX_UID_MIN = 1_000_000


def random_uid() -> int:
    # one per sandbox, so RLIMIT_NPROC counts only that sandbox's processes and
    # nothing else runs under it
    return SANDBOX_UID_MIN + secrets.randbelow(1 << 30)


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
      list them without mounting their filesystem;
    - the cheap probes and evictions of the host's page cache, which outlives every
      process and so could carry a hand from one rotation of a deal to the next
      (`host_reset` drops it between rotations; this leaves a bot only the slow
      probes): `mincore` and `cachestat` (report what is cached), `preadv2`/`pwritev2`
      with RWF_NOWAIT (fails on an uncached page) or RWF_DONTCACHE (drops what it
      read), `fadvise64` and `madvise` advice that loads, evicts or ages file pages
      (POSIX_FADV_WILLNEED, DONTNEED, NOREUSE; MADV_WILLNEED, COLD, PAGEOUT,
      COLLAPSE), `readahead`, `process_madvise`, and io_uring and Linux AIO, which can
      issue the same requests in ways a filter cannot read.
      Each fails with the error a kernel without it gives, so programs fall back.
    """
    import pyseccomp as sc  # libseccomp through ctypes

    program = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in ("add_key", "keyctl", "request_key", "unshare", "setns", "mq_open"):
        program.add_rule(sc.ERRNO(errno.EPERM), name)
    program.add_rule(sc.ERRNO(errno.EPERM), "clone",
                     sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
    for name in ("clone3", "memfd_create"):
        program.add_rule(sc.ERRNO(errno.ENOSYS), name)
    _refuse_page_cache_probes(program)
    with tempfile.TemporaryFile() as out:
        program.export_bpf(out)
        out.seek(0)
        return out.read()


_CLONE_NEWUSER = 0x10000000
# preadv2/pwritev2 flags (include/uapi/linux/fs.h)
_RWF_NOWAIT = 0x08
_RWF_DONTCACHE = 0x80
_POSIX_FADV_WILLNEED = 3  # and above: DONTNEED 4, NOREUSE 5
# madvise advice (include/uapi/asm-generic/mman-common.h) that loads, evicts or ages
# file pages: WILLNEED, COLD, PAGEOUT, COLLAPSE
_MADV_FILE_CACHE = (3, 20, 21, 25)
# cachestat (Linux 6.5) is the same number on x86_64 and aarch64; an older libseccomp
# does not know its name
_CACHESTAT = 451


def _refuse_page_cache_probes(program: Any) -> None:
    """Add to `program` the rules of `seccomp_program` on the host's page cache."""
    import pyseccomp as sc

    for name in ("mincore", "readahead", "process_madvise", "io_uring_setup", "io_setup"):
        program.add_rule(sc.ERRNO(errno.ENOSYS), name)
    try:
        program.add_rule(sc.ERRNO(errno.ENOSYS), "cachestat")
    except (OSError, RuntimeError, ValueError):  # unknown to this libseccomp
        program.add_rule(sc.ERRNO(errno.ENOSYS), _CACHESTAT)
    # flags are the sixth argument on 64-bit machines (fd, iov, iovcnt, pos_l, pos_h, flags)
    for name in ("preadv2", "pwritev2"):
        for flag in (_RWF_NOWAIT, _RWF_DONTCACHE):
            program.add_rule(sc.ERRNO(errno.EOPNOTSUPP), name,
                             sc.Arg(5, sc.MASKED_EQ, flag, flag))
    program.add_rule(sc.ERRNO(errno.EINVAL), "fadvise64",
                     sc.Arg(3, sc.GE, _POSIX_FADV_WILLNEED))
    for advice in _MADV_FILE_CACHE:
        program.add_rule(sc.ERRNO(errno.EINVAL), "madvise", sc.Arg(2, sc.EQ, advice))


def bwrap_options(*, binds: Iterable[Path], socket: Path | None, tmp_mib: int,
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
    # the sandbox's own /proc, but with the host's activity counters hidden (host_counters)
    argv += ["--proc", "/proc", *host_counters.bind_options(), "--dev", "/dev",
             "--size", str(tmp_mib * MIB), "--perms", "1777", "--tmpfs", "/tmp",
             "--size", str(tmp_mib * MIB), "--perms", "1777", "--tmpfs", "/dev/shm"]
    for system in SYSTEM_DIRS:
        if os.path.islink(system):
            argv += ["--symlink", os.readlink(system), system]
            made.add(system)
        elif os.path.isdir(system):
            argv += ["--ro-bind", system, system]
            made.add(system)
    for name in ETC_FILES:
        path = f"/etc/{name}"
        if os.path.lexists(path):
            argv += [*_dirs_for(path, made), "--ro-bind", path, path]
    seen: set[str] = set()
    # resolved, so that what is shown is exactly what `exposed` checked
    for path in sorted({os.path.realpath(p) for p in binds}, key=len):
        if any(path == s or path.startswith(s.rstrip("/") + "/") for s in seen):
            continue  # inside a directory already shown
        if any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS if d in made):
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


def as_bot_user(uid: int, switch_users: bool = False) -> list[str]:
    """As root, the command runs as `uid` with no capabilities (else bwrap's user
    namespace has already made it uid 65534). A fork server (`switch_users`) keeps
    CAP_SETUID and CAP_SETGID, and nothing else, to give each child a user of its own."""
    if os.geteuid() != 0:
        return []
    caps = "-all,+setuid,+setgid" if switch_users else "-all"
    ambient = [f"--ambient-caps={caps}"] if switch_users else []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            f"--inh-caps={caps}", *ambient, f"--bounding-set={caps}", "--no-new-privs", "--"]


def limits_prefix(limits: SandboxLimits, *, nproc: bool = True) -> list[str]:
    """`prlimit` run inside the sandbox, as the bot's user, before the bot starts.

    Without `nproc` there is no RLIMIT_NPROC: the sandbox's pids cgroup counts its
    processes instead (and counts each fork it refuses, which RLIMIT_NPROC does not)."""
    address_space = limits.memory_mib * MIB + _ADDRESS_SPACE_SLACK
    # the kernel's CPU limit lies a little above the watchdog's, so that the watchdog
    # stops the sandbox first and the fault says why
    # RLIMIT_NOFILE: the referee's own (often thousands) would let one bot hold that many
    # connections to the referee, or socket buffers in as many sockets
    return ["prlimit", *([f"--nproc={limits.processes}"] if nproc else []),
            f"--cpu={limits.cpu_seconds + 5}", f"--as={address_space}",
            f"--fsize={limits.tmp_mib * MIB}", "--core=0", f"--nofile={limits.files}",
            # no locked memory: a bot has no use for it, and each lock moves a counter of
            # the whole host (host_counters)
            "--memlock=0", "--"]
