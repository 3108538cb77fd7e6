"""The host state that outlives a bot process, reset between the phases of a tournament.

The kernel's page cache and its dentry and inode caches belong to the host, not to a
sandbox: a bot can encode its hand in which pages of a file it can read are cached
(or which names were looked up) and a later process of the same bot can read it back,
by timing reads or by what the kernel maps around a page fault. The seccomp filter
refuses the cheap probes and evictions (`bubblewrap.seccomp_program`); what is left is
reset here: once every bot process of a phase is stopped, the clean page cache and the
reclaimable slab (dentries, inodes) are dropped, `echo 3 > /proc/sys/vm/drop_caches`.
Pages that a live process maps or that are dirty survive a drop, which is why the
processes are stopped first (and why the guarantee is per host: see
docs/FAIRPLAY.md "Host state").

Only root (of the host, not of a container whose /proc/sys is read-only) can do it;
`reset_problem` says why it cannot be done here, and a run records whether it held.
`CFARENA_HOST_RESET=off` in the environment turns it off (said at start and recorded
as not held, like a machine that cannot): the test suite does so for every test that
does not test this defence, since each drop makes every later process read its code
from disk again (tests/conftest.py).

The reset holds only if no other cfarena process plays tournaments on the host (their
bots are not stopped before the drop). Each process that plays holds the host's
players' lock (`HostReset.claim`, an exclusive flock of `cfarena-players.lock` in
/run/lock, or /run) for as long as it plays; a process that finds it held does not
claim the reset for its tournaments, and holds a shared flock of
`cfarena-players.others` instead, which the holder checks on each side of every drop
(`HostReset.shared`): while another process plays, the holder claims it no more either.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("cfarena.sandbox")

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_PAGE_CACHE_AND_SLAB = "3"
LOCK_DIRS = (Path("/run/lock"), Path("/run"))
PLAYERS_LOCK = "cfarena-players.lock"  # held (exclusive) by the one process that claims
OTHERS_LOCK = "cfarena-players.others"  # held (shared) by every other process that plays
OFF_ENV = "CFARENA_HOST_RESET"  # "off" (or 0, no, false): never drop


class HostResetError(OSError):
    """The host's caches could not be dropped (the message says why)."""


_OFF_VALUES = ("0", "off", "no", "false")
_ON_VALUES = ("", "1", "on", "yes", "true")
CGROUPS_ENV = "CFARENA_CGROUPS"  # "off" (or 0, no, false): no cgroups for sandboxes
DEFENCE_SWITCHES = (OFF_ENV, CGROUPS_ENV)  # the variables that turn a host defence off


def turned_off(variable: str) -> bool:
    """Whether the environment turns a host defence off: `variable` is off, 0, no or
    false (any case); anything else leaves it on."""
    return os.environ.get(variable, "").strip().lower() in _OFF_VALUES


def misread_switch(variable: str) -> str | None:
    """One line if `variable` is set to neither an off nor an on value: a misspelt
    "off" leaves the defence on, and the organiser is told so rather than left to
    believe it off."""
    value = os.environ.get(variable)
    if value is None or value.strip().lower() in (*_OFF_VALUES, *_ON_VALUES):
        return None
    return (f"{variable}={value!r} is not understood ({', '.join(_OFF_VALUES)} turn the "
            f"defence off; {', '.join(v for v in _ON_VALUES if v)} leave it on): it stays on")


def reset_problem(path: Path = DROP_CACHES) -> str | None:
    """Why the host's caches cannot be dropped here (one line), or None if they can."""
    if turned_off(OFF_ENV):
        return f"turned off by {OFF_ENV}"
    if not path.exists():
        return f"{path} does not exist"
    if os.geteuid() != 0:
        return f"not root: {path} can be written only by root"
    # access() also answers EROFS for a read-only /proc/sys (a container's)
    if not os.access(path, os.W_OK):
        return f"{path} is not writable here (a container's read-only /proc/sys?)"
    return None


@dataclass
class HostReset:
    """Drops the host's clean caches on request and counts what it cost."""

    path: Path = DROP_CACHES
    cannot: str | None = None  # why this process may not drop them (`reset_problem`)
    drops: int = 0
    seconds: float = 0.0
    lock_dirs: tuple[Path, ...] = LOCK_DIRS
    sole: bool = False  # this process holds the players' lock (`claim`)
    _lock_dir: Path | None = None
    _fds: list[int] = field(default_factory=list)

    def claim(self) -> str | None:
        """Take the host's players' lock for as long as this process plays (`release`):
        None if it is the only cfarena process playing here, else why the reset cannot
        be claimed for its tournaments (one line)."""
        self.release()
        problems = []
        for folder in self.lock_dirs:
            try:
                fd = os.open(folder / PLAYERS_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                problems.append(f"{folder / PLAYERS_LOCK}: {exc.strerror or exc}")
                continue
            self._lock_dir = folder
            self._fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(folder / PLAYERS_LOCK)
                with contextlib.suppress(OSError):
                    others = os.open(folder / OTHERS_LOCK,
                                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                    self._fds.append(others)
                    fcntl.flock(others, fcntl.LOCK_SH)  # the holder sees this process
                return (f"another cfarena process{holder} plays tournaments on this host "
                        f"(it holds {folder / PLAYERS_LOCK})")
            self.sole = True
            return None
        return "the players' lock cannot be created (" + "; ".join(problems) + ")"

    def shared(self) -> bool:
        """Whether another cfarena process plays tournaments on this host now (always
        true when this one does not hold the players' lock)."""
        if not self.sole or self._lock_dir is None:
            return True
        try:
            fd = os.open(self._lock_dir / OTHERS_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # the lock, if taken, goes with it
        return False

    def release(self) -> None:
        """Let go of the players' lock (this process plays no more)."""
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self.sole = False

    def drop(self) -> float:
        """Drop the clean page cache, dentries and inodes; the seconds it took.
        HostResetError if the kernel refused, or if this process may not (`cannot`)."""
        if self.cannot is not None:
            raise HostResetError(0, f"cannot drop the host's caches: {self.cannot}")
        started = time.monotonic()
        try:
            with open(self.path, "w") as out:
                out.write(_PAGE_CACHE_AND_SLAB)
        except OSError as exc:
            raise HostResetError(exc.errno, f"cannot drop the host's caches: "
                                            f"{exc.strerror or exc}") from None
        took = time.monotonic() - started
        self.drops += 1
        self.seconds += took
        log.info("host caches dropped in %.2f s", took)
        return took


def claim_host_reset(lock_dirs: tuple[Path, ...] = LOCK_DIRS) -> HostReset:
    """What drops this host's caches for a process about to play tournaments, with the
    host's players' lock taken (one warning line when another process holds it: the
    reset is then not claimed). Where the caches cannot be dropped here (`cannot` says
    why: not root, turned off) the lock is taken all the same, so that a process that
    does drop them sees this one play and does not claim the reset either."""
    host = HostReset(cannot=reset_problem(), lock_dirs=lock_dirs)
    problem = host.claim()
    if problem is not None and host.cannot is None:
        log.warning("%s: the host reset between phases is not claimed for this process's "
                    "tournaments", problem)
    return host


def _holder(lock: Path) -> str:
    """" (pid N)" naming the process holding an exclusive flock on `lock`, or ""."""
    try:
        st = lock.stat()
        device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        for line in Path("/proc/locks").read_text().splitlines():
            parts = line.split()
            if len(parts) > 5 and parts[1] == "FLOCK" and parts[3] == "WRITE" \
                    and parts[5] == device:
                return f" (pid {parts[4]})"
    except (OSError, ValueError):
        pass
    return ""
