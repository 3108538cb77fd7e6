"""The host's own counters, hidden from sandboxes: static stand-ins over the /proc files
that show the whole machine's activity.

`/proc/vmstat`, `/proc/stat`, `/proc/meminfo`, `/proc/pressure/*` and their kin count
what every process on the host has done since boot. A bot can move some of them at
will (each `mlock` of k pages adds k to `unevictable_pgs_mlocked`; each fork adds one
to `processes`), few other processes touch them, and no reset of the page cache
resets them: a process of one rotation could leave a number there for a process of
the next (a hostile review carried 12 bits across a cache drop through one vmstat
counter). bwrap's `/proc` is the sandbox's own for its processes, but these files
are the host's, so each sandbox is shown a file made once per referee instead:
the machine's fixed facts (its CPUs, its memory, its boot time) and zeros.

`bind_options()` gives bwrap's options that lay them over `/proc`. What remains of
host-wide counters that need no file (the inode numbers of pipes and sockets, from
one counter for the whole host) is written down in docs/FAIRPLAY.md.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

# host-wide files whose contents follow the machine's activity: each is shown as a
# static stand-in (made from the real file's shape where a program may parse it)
COUNTER_FILES = ("stat", "vmstat", "meminfo", "loadavg", "zoneinfo", "buddyinfo",
                 "pagetypeinfo", "slabinfo", "interrupts", "softirqs", "schedstat",
                 "diskstats", "vmallocinfo", "locks", "key-users", "sched_debug",
                 "timer_list", "lock_stat", "latency_stats")
# directories of such files: shown empty
COUNTER_DIRS = ("pressure",)


def bind_options() -> list[str]:
    """bwrap options laying the stand-ins over the sandbox's `/proc` (after `--proc`)."""
    made = _stand_ins()
    argv: list[str] = []
    for name in COUNTER_FILES + COUNTER_DIRS:
        if os.path.exists(f"/proc/{name}"):
            argv += ["--ro-bind", str(made / name), f"/proc/{name}"]
    return argv


def stand_in(name: str) -> str:
    """What a sandbox reads in /proc/`name` (one of COUNTER_FILES)."""
    real = _read(f"/proc/{name}")
    if name == "stat":
        return _stat(real)
    if name == "meminfo":
        return _meminfo(real)
    if name == "vmstat":
        return "".join(f"{line.split()[0]} 0\n" for line in real.splitlines() if line.strip())
    if name == "loadavg":
        return "0.00 0.00 0.00 1/1 1\n"
    return ""


@functools.cache
def _stand_ins() -> Path:
    """The directory of stand-ins, made once per referee process (removed at its exit)."""
    folder = Path(tempfile.mkdtemp(prefix="cfarena-proc-"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    for name in COUNTER_FILES:
        path = folder / name
        path.write_text(stand_in(name))
        path.chmod(0o444)
    for name in COUNTER_DIRS:
        (folder / name).mkdir(mode=0o755)
        (folder / name).chmod(0o755)
    return folder


def _stat(real: str) -> str:
    """/proc/stat with its CPU lines (one per CPU, so programs count them) at zero and
    the boot time; the counters of interrupts, switches and forks at zero."""
    cpus = [line.split()[0] for line in real.splitlines() if re.match(r"cpu\d+ ", line)]
    boot = next((line for line in real.splitlines() if line.startswith("btime ")), "btime 0")
    zeros = " 0" * 10
    lines = [f"cpu {zeros}", *(f"{cpu}{zeros}" for cpu in cpus), "intr 0", "ctxt 0", boot,
             "processes 0", "procs_running 1", "procs_blocked 0", "softirq 0"]
    return "\n".join(lines) + "\n"


# /proc/meminfo values kept as they are: the machine's size, not its activity
_MEMINFO_FIXED = ("MemTotal", "SwapTotal", "CommitLimit", "VmallocTotal", "Hugepagesize",
                  "HugePages_Total", "Hugetlb", "DirectMap4k", "DirectMap2M", "DirectMap1G")


def _meminfo(real: str) -> str:
    """/proc/meminfo with the machine's sizes and all of it free (nothing that moves)."""
    values: dict[str, str] = {}
    for line in real.splitlines():
        key, _, rest = line.partition(":")
        if key:
            values[key] = rest.strip()
    total = values.get("MemTotal", "0 kB")
    out = []
    for key, rest in values.items():
        unit = " kB" if rest.endswith("kB") else ""
        if key in _MEMINFO_FIXED:
            value = rest
        elif key in ("MemFree", "MemAvailable"):
            value = total
        elif key == "SwapFree":
            value = values.get("SwapTotal", "0 kB")
        else:
            value = f"0{unit}"
        out.append(f"{key + ':':<16}{value:>12}")
    return "\n".join(out) + "\n"


def _read(path: str) -> str:
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as file:
        return file.read()
    return ""
