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
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("cfarena.sandbox")

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_PAGE_CACHE_AND_SLAB = "3"


class HostResetError(OSError):
    """The host's caches could not be dropped (the message says why)."""


def reset_problem(path: Path = DROP_CACHES) -> str | None:
    """Why the host's caches cannot be dropped here (one line), or None if they can."""
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
    drops: int = 0
    seconds: float = 0.0

    def drop(self) -> float:
        """Drop the clean page cache, dentries and inodes; the seconds it took.
        HostResetError if the kernel refused."""
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
