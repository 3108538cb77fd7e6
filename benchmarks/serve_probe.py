#!/usr/bin/env python3
"""`cfarena serve` with a probe of its memory inside: benchmarks/soak.py --probe.

    python benchmarks/serve_probe.py PROBE_DIR TRACE_AT NFRAMES -- serve ARGS...

Runs the `cfarena` command line (ARGS) in this process, with a daemon thread that
every second reads the count of ended matches the soak writes to PROBE_DIR/ended and,
when it changed, appends one JSON line to PROBE_DIR/stats.jsonl: the matches ended,
RSS (in all; of the main malloc arena, the other malloc arenas, other anonymous
memory and files), glibc's malloc counters (`mallinfo2`: bytes in use in the heap
and in mmapped chunks, bytes held free), the Python allocator's blocks in use
(`sys.getallocatedblocks`; not `gc.get_objects()`, whose list, taken from another
thread, can hold a tuple that is being built and break it), SQLite's own allocated
bytes (`sqlite3_memory_used`) and, summed over serve's open SQLite connections
(`sqlite3_db_status`, as each was last returned to its pool), the bytes of their
page caches, prepared statements and schemas, the connections open, the distinct
SQL texts serve has executed (each is written to PROBE_DIR/statements.txt after
the matches ended when it first ran: a text that keeps changing, values written
into the SQL, fills each connection's statement cache), the process's threads, the stalls
the referee's `LoopLag` keeps and, once started, the bytes tracemalloc traces. That
tells growth of Python objects (blocks, traced bytes), of C allocations (malloc in
use less what Python holds; SQLite's part by kind) and of freed memory the
allocator keeps (malloc free: fragmentation) apart, which RSS alone cannot.

tracemalloc starts (NFRAMES frames a trace; 0: never) once TRACE_AT matches have
ended (after the warm-up: imports and caches are not traced). The soak writes "a" to
PROBE_DIR/snap when the first snapshot is due (a third of its run, in matches or in
minutes) and "b" at the end of its run, before it stops serve, and waits for
PROBE_DIR/tracemalloc.txt: the allocations that grew between the two snapshots, by
traceback (the largest first), after the count of each type of object the garbage
collector tracks that grew (those counts are taken on serve's event loop, not in
this thread). Only the soak uses this; serve itself has no such hook.
"""

from __future__ import annotations

import _sqlite3
import asyncio
import contextlib
import ctypes
import gc
import json
import sqlite3
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.pool import Pool

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


def _sqlite_library() -> ctypes.CDLL | None:
    """The SQLite library the sqlite3 module is linked with (through `_sqlite3`'s own
    file, whose dependencies dlsym searches: a system libsqlite3 that `find_library`
    names may be another SQLite, whose functions would misread this one's handles),
    or None if its version is not the module's."""
    try:
        library = ctypes.CDLL(_sqlite3.__file__)
        version = library.sqlite3_libversion
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    return library if version().decode() == sqlite3.sqlite_version else None


def _sqlite_memory() -> Callable[[], int] | None:
    """SQLite's own count of the bytes it has allocated (`sqlite3_memory_used`), or
    None."""
    library = _sqlite_library()
    if library is None:
        return None
    used: Callable[[], int] = library.sqlite3_memory_used
    used.restype = ctypes.c_int64  # type: ignore[attr-defined]
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
                matches: int, types_before: Counter[str] | None,
                types_after: Counter[str] | None) -> None:
    keep = [tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, __file__)]
    stats = second.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
    grown = sum(s.size_diff for s in stats)
    lines = [f"{grown / 1024:.1f} KiB more traced over {matches} matches "
             f"({grown / 1024 / max(matches, 1):.2f} KiB/match)"]
    if types_before is not None and types_after is not None:
        types_after.subtract(types_before)
        grew = [(name, n) for name, n in types_after.most_common(TOP) if n > 0]
        lines.append("objects the garbage collector tracks that grew, by type: "
                     + (", ".join(f"{name} {n:+d}" for name, n in grew) or "none"))
    lines.append("largest growths:")
    for stat in stats[:TOP]:
        lines.append(f"\n{stat.size_diff / 1024:+.1f} KiB ({stat.count_diff:+d} blocks; "
                     f"now {stat.size / 1024:.1f} KiB in {stat.count})")
        lines.extend(f"    {line}" for line in stat.traceback.format(limit=12))
    path.write_text("\n".join(lines) + "\n")


LAGS: list[LoopLag] = []  # the referee loops' stall records (serve has one)
LOOPS: list[asyncio.AbstractEventLoop] = []  # the loop each of them ticks on


def _watch_lags() -> None:
    """Keep each `LoopLag` that starts in LAGS (its loop in LOOPS), to count the
    stalls it keeps."""
    start = LoopLag.start

    def started(lag: LoopLag) -> None:
        LAGS.append(lag)
        LOOPS.append(asyncio.get_running_loop())
        start(lag)

    LoopLag.start = started  # type: ignore[method-assign,assignment]


async def _type_counts() -> Counter[str]:
    """How many objects of each type the garbage collector tracks (on the event loop:
    see the module docstring)."""
    gc.collect()
    return Counter(type(obj).__qualname__ for obj in gc.get_objects())


def _loop_type_counts() -> Counter[str] | None:
    """`_type_counts()` run on serve's event loop (None: no loop, or no answer in a
    minute)."""
    if not LOOPS:
        return None
    try:
        return asyncio.run_coroutine_threadsafe(_type_counts(), LOOPS[0]).result(60)
    except (FutureTimeout, RuntimeError):
        return None


_DBSTATUS = {"sqlite_cache": 1, "sqlite_schema": 2, "sqlite_stmt": 3}  # sqlite3.h's ops


class _SQLiteWatch:
    """serve's SQLite connections (every SQLAlchemy pool's) and the SQL texts it runs.

    A connection's `sqlite3_db_status` is read by the thread that returns it to its
    pool (it is idle then, and open): read from this probe's thread, a connection
    that another thread closes meanwhile would be freed under it."""

    def __init__(self, directory: Path) -> None:
        self.open: dict[int, dict[str, int]] = {}  # id of a connection -> its last status
        self.texts: set[int] = set()  # hashes of the distinct statement texts
        self.ended = 0  # the matches ended (the probe's count)
        self.out = directory / "statements.txt"
        library = _sqlite_library()
        self.db_status = None if library is None else library.sqlite3_db_status
        if self.db_status is not None:
            self.db_status.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_int),
                                       ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        event.listen(Pool, "connect", self._returned)
        event.listen(Pool, "checkin", self._returned)
        event.listen(Pool, "close", self._closed)
        event.listen(Pool, "close_detached", self._closed_detached)
        event.listen(Engine, "before_cursor_execute", self._executed)

    def _returned(self, dbapi_conn: Any, _record: Any) -> None:
        if not isinstance(dbapi_conn, sqlite3.Connection) or self.db_status is None:
            return
        # a pysqlite Connection's first field after its object header: its sqlite3 *
        db = ctypes.c_void_p.from_address(id(dbapi_conn) + object.__basicsize__).value
        if not db:  # closed (pysqlite clears it)
            self.open.pop(id(dbapi_conn), None)
            return
        current, high = ctypes.c_int(), ctypes.c_int()
        status = dict.fromkeys(_DBSTATUS, 0)
        for column, op in _DBSTATUS.items():
            if self.db_status(db, op, ctypes.byref(current), ctypes.byref(high), 0) == 0:
                status[column] = current.value
        self.open[id(dbapi_conn)] = status

    def _closed(self, dbapi_conn: Any, _record: Any) -> None:
        self.open.pop(id(dbapi_conn), None)

    def _closed_detached(self, dbapi_conn: Any) -> None:
        self.open.pop(id(dbapi_conn), None)

    def _executed(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        key = hash(statement)
        if key in self.texts:
            return
        self.texts.add(key)
        with self.out.open("a") as stream:
            stream.write(f"{self.ended}: {' '.join(statement.split())[:400]}\n")

    def status(self) -> dict[str, int]:
        """The bytes of the open connections' page caches, statements and schemas (as
        each was last returned to its pool), the connections open, and the distinct
        statement texts run so far."""
        row = dict.fromkeys(_DBSTATUS, 0)
        statuses = list(self.open.values())
        for status in statuses:
            for column in _DBSTATUS:
                row[column] += status[column]
        return row | {"sqlite_conns": len(statuses), "statements": len(self.texts)}


def _threads() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _probe(directory: Path, trace_at: int, nframes: int, watch: _SQLiteWatch) -> None:
    ended_file, snap_file = directory / "ended", directory / "snap"
    out = directory / "stats.jsonl"
    first: tracemalloc.Snapshot | None = None
    types: Counter[str] | None = None
    sqlite_used = _sqlite_memory()
    snapped_at = last = -1
    while True:
        time.sleep(1.0)
        try:
            ended = int(ended_file.read_text())
        except (OSError, ValueError):
            continue
        phase = ""
        with contextlib.suppress(OSError):
            phase = snap_file.read_text().strip()
        if ended == last and not (phase == "b" and first is not None):
            continue
        last = watch.ended = ended
        if nframes and ended >= trace_at and not tracemalloc.is_tracing():
            tracemalloc.start(nframes)
        if tracemalloc.is_tracing() and first is None and phase in ("a", "b"):  # b: a short run
            types = _loop_type_counts()
            gc.collect()
            first, snapped_at = tracemalloc.take_snapshot(), ended
        elif first is not None and phase == "b":
            types_after = _loop_type_counts()
            gc.collect()
            _write_diff(directory / "tracemalloc.txt", first, tracemalloc.take_snapshot(),
                        ended - snapped_at, types, types_after)
            first, nframes = None, 0
            tracemalloc.stop()
        row = {"ended": ended, **_rss_kib(), **_mallinfo2(),
               "py_blocks": sys.getallocatedblocks(),
               "stalls": sum(len(lag.stalls) + len(lag.freezes) for lag in LAGS),
               "sqlite": sqlite_used() if sqlite_used is not None else None,
               **watch.status(), "threads": _threads(),
               "traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing()
               else None}
        with out.open("a") as stream:
            stream.write(json.dumps(row) + "\n")


def main() -> None:
    directory, trace_at, nframes = sys.argv[1:4]
    assert sys.argv[4] == "--", sys.argv
    watch = _SQLiteWatch(Path(directory))
    threading.Thread(target=_probe, daemon=True,
                     args=(Path(directory), int(trace_at), int(nframes), watch)).start()
    sys.argv = ["cfarena", *sys.argv[5:]]
    from cfarena.server.cli import main as cfarena

    _watch_lags()

    cfarena()


if __name__ == "__main__":
    main()
