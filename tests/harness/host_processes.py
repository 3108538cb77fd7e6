"""The machine's processes as /proc shows them: one walk for the tests' scans (a
process's environment, command line, cgroup or working directory), each a predicate.
A process that ends during the walk, or that the kernel hides, is passed over."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path


def proc_entries() -> Iterator[Path]:
    """/proc/PID of every process alive when the walk reaches it."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield entry


def is_zombie(entry: Path) -> bool:
    """Whether the process at /proc/PID `entry` is a zombie (OSError if it is gone)."""
    return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def pids_where(test: Callable[[Path], bool], zombies: bool = False) -> list[int]:
    """PIDs of the live processes (zombies too, if `zombies`) whose /proc entry passes
    `test`; an entry that `test` cannot read (OSError: gone meanwhile) does not."""
    found = []
    for entry in proc_entries():
        with contextlib.suppress(OSError):
            if test(entry) and (zombies or not is_zombie(entry)):
                found.append(int(entry.name))
    return found
