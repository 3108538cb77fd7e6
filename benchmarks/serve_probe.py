#!/usr/bin/env python3
"""`cfarena serve` with a probe of its memory inside: benchmarks/soak.py --probe.

    python benchmarks/serve_probe.py PROBE_DIR TRACE_AT SNAP_A SNAP_B NFRAMES -- serve ARGS...

Runs the `cfarena` command line (ARGS) in this process, with a daemon thread that
every second reads the count of ended matches the soak writes to PROBE_DIR/ended and,
when it changed, appends one JSON line to PROBE_DIR/stats.jsonl: the matches ended,
RSS (in all; of the main malloc arena, the other malloc arenas, other anonymous
memory and files), glibc's malloc counters (`mallinfo2`: bytes in use in the heap
and in mmapped chunks, bytes held free), the Python allocator's blocks in use
(`sys.getallocatedblocks`; not `gc.get_objects()`, whose list, taken from another
thread, can hold a tuple that is being built and break it), SQLite's own allocated
bytes (`sqlite3_memory_used`), the stalls the referee's `LoopLag` keeps and, once
started, the bytes tracemalloc traces. That tells growth of Python objects (blocks,
traced bytes), of C allocations (malloc in use less what Python holds) and of freed
memory the allocator keeps (malloc free: fragmentation) apart, which RSS alone
cannot.

tracemalloc starts (NFRAMES frames a trace; 0: never) once TRACE_AT matches have
ended (after the warm-up: imports and caches are not traced), snapshots are taken at
SNAP_A and SNAP_B ended matches, and the allocations that grew between them, by
traceback, go to PROBE_DIR/tracemalloc.txt (the largest first). Only the soak uses
this; serve itself has no such hook.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cfarena.server.referee.lag import LoopLag

TOP = 40  # tracebacks written


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _mallinfo2() -> dict[str, int]:
    """glibc's malloc counters in bytes ({} where there is no mallinfo2)."""
    try:
        call = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return {}
    call.restype = _MallInfo2
    info = call()
    return {"heap": info.arena, "mmapped": info.hblkhd, "in_use": info.uordblks,
            "free": info.fordblks}


def _sqlite_memory() -> Callable[[], int] | None:
    """SQLite's own count of the bytes it has allocated (`sqlite3_memory_used`, from
    the library the sqlite3 module uses), or None."""
    name = ctypes.util.find_library("sqlite3")
    try:
        used = ctypes.CDLL(name).sqlite3_memory_used if name else None
    except (OSError, AttributeError):
        return None
    if used is not None:
        used.restype = ctypes.c_int64
    return used


HEAP_MAX = 64 << 20  # glibc's reservation for each malloc arena but the main one


def _rss_kib() -> dict[str, int]:
    """RSS in KiB (/proc/self/smaps): in all; of the main malloc arena ([heap]); of
    the other malloc arenas (anonymous mappings at a multiple of 64 MiB, 64 MiB with
    their reserved rest); of other anonymous memory (Python's 1 MiB arenas, thread
    stacks, mmapped blocks); of mapped files (code, SQLite's -shm)."""
    maps: list[list[Any]] = []  # [start, end, perms, name, rss]
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head[0] == "Rss:":
            maps[-1][4] += int(head[1])
        elif "-" in head[0] and not head[0].endswith(":"):  # a mapping's first line
            start, end = (int(x, 16) for x in head[0].split("-"))
            maps.append([start, end, head[1], head[5] if len(head) > 5 else "", 0])
    rss = {"rss_kib": 0, "rss_heap": 0, "rss_arenas": 0, "rss_anon": 0, "rss_file": 0}
    for i, (start, end, _perms, name, kib) in enumerate(maps):
        after = maps[i + 1] if i + 1 < len(maps) else None
        reserved = end if after is None or after[0] != end or after[3] else after[1]
        kind = ("rss_heap" if name == "[heap]" else "rss_file" if name.startswith("/")
                else "rss_arenas" if not name and start % HEAP_MAX == 0
                and reserved - start == HEAP_MAX else "rss_anon")
        rss[kind] += kib
        rss["rss_kib"] += kib
    return rss


def _write_diff(path: Path, first: tracemalloc.Snapshot, second: tracemalloc.Snapshot,
                matches: int) -> None:
    keep = [tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, __file__)]
    stats = second.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
    grown = sum(s.size_diff for s in stats)
    lines = [f"{grown / 1024:.1f} KiB more traced over {matches} matches "
             f"({grown / 1024 / max(matches, 1):.2f} KiB/match); largest growths:"]
    for stat in stats[:TOP]:
        lines.append(f"\n{stat.size_diff / 1024:+.1f} KiB ({stat.count_diff:+d} blocks; "
                     f"now {stat.size / 1024:.1f} KiB in {stat.count})")
        lines.extend(f"    {line}" for line in stat.traceback.format(limit=12))
    path.write_text("\n".join(lines) + "\n")


LAGS: list[LoopLag] = []  # the referee loops' stall records (serve has one)


def _watch_lags() -> None:
    """Keep each `LoopLag` that starts in LAGS, to count the stalls it keeps."""
    start = LoopLag.start

    def started(lag: LoopLag) -> None:
        LAGS.append(lag)
        start(lag)

    LoopLag.start = started  # type: ignore[method-assign,assignment]


def _probe(directory: Path, trace_at: int, snap_a: int, snap_b: int, nframes: int) -> None:
    ended_file, out = directory / "ended", directory / "stats.jsonl"
    first: tracemalloc.Snapshot | None = None
    sqlite_used = _sqlite_memory()
    snapped_at = last = -1
    while True:
        time.sleep(1.0)
        try:
            ended = int(ended_file.read_text())
        except (OSError, ValueError):
            continue
        if ended == last:
            continue
        last = ended
        if nframes and ended >= trace_at and not tracemalloc.is_tracing():
            tracemalloc.start(nframes)
        if tracemalloc.is_tracing() and first is None and ended >= snap_a:
            gc.collect()
            first, snapped_at = tracemalloc.take_snapshot(), ended
        elif first is not None and ended >= snap_b:
            gc.collect()
            _write_diff(directory / "tracemalloc.txt", first, tracemalloc.take_snapshot(),
                        ended - snapped_at)
            first, nframes = None, 0
            tracemalloc.stop()
        row = {"ended": ended, **_rss_kib(), **_mallinfo2(),
               "py_blocks": sys.getallocatedblocks(),
               "stalls": sum(len(lag.stalls) + len(lag.freezes) for lag in LAGS),
               "sqlite": sqlite_used() if sqlite_used is not None else None,
               "traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing()
               else None}
        with out.open("a") as stream:
            stream.write(json.dumps(row) + "\n")


def main() -> None:
    directory, trace_at, snap_a, snap_b, nframes = sys.argv[1:6]
    assert sys.argv[6] == "--", sys.argv
    threading.Thread(target=_probe, daemon=True,
                     args=(Path(directory), int(trace_at), int(snap_a), int(snap_b),
                           int(nframes))).start()
    sys.argv = ["cfarena", *sys.argv[7:]]
    from cfarena.server.cli import main as cfarena

    _watch_lags()

    cfarena()


if __name__ == "__main__":
    main()
