"""Memory that the C allocator holds freed, given back to the system after each match:
`cfarena serve` runs for weeks.

Python hands large blocks (a game log's JSON text, a page being rendered, a query's
rows) to the C library's malloc, and glibc's malloc keeps what is freed in its arenas
(one per thread that allocated, up to eight per core) for reuse; a few requests in
different threads leave free holes in each arena that are never given back. Measured
(benchmarks/soak.py, full-length 4-player matches, a spectator on every page): with
the web on, serve's malloc arenas held ~13 MB free after 30 matches and ~33 MB after
280, most of serve's growth once each page read its logs one at a time; 600 short
matches grew serve 36.2 KiB per match without a trim, 19.4 trimmed every 0.5 s. glibc's
`malloc_trim(0)` returns the free pages of every arena to the system (they stay
mapped: used again, they come back zeroed); it takes ~0.2 ms (14 ms at worst on a
loaded 2-core machine), so it runs in a worker thread, once per stored match, never
two at once. On a C library without it (musl, macOS) nothing is done.

serve also caps glibc's arenas at `ARENAS` (`limit_arenas`, as MALLOC_ARENA_MAX=2
would; an operator's MALLOC_ARENA_MAX or glibc.malloc.arena_max tunable wins).
Paired soaks (benchmarks/soak.py --viewers --matches 1000 --warmup 200 --players 4,
both at once): 16 arenas (glibc's default here) 13.4 KiB/match (halves 14.8 / 14.8),
2 arenas 9.7 (11.5 / 6.3); with the web off, 1,500 matches: 5.3 against 2.6.

And it fixes glibc's mmap threshold at `MMAP_THRESHOLD` (`fix_mmap_threshold`, as
MALLOC_MMAP_THRESHOLD_=131072 would; an operator's, or the tunable, wins): left to
itself, glibc raises it to the size of every larger mapped block freed. The sorts
that reads of the whole history make SQLite do in the web's threads (the bot pages';
the leaderboard's until the ladder's tallies, migration 0010) use buffers that grow
with the history (a query's peak ~0.7-2 MiB at 4,000-48,000 matches,
docs/OPERATIONS.md); once such a buffer is freed,
blocks up to its size, of sizes that change from one request to the next, come from
the arenas and leave holes there. Two paired soaks against main (benchmarks/soak.py
--viewers --players 2 --warmup 150 --probe --baseline --together, 15 and 20
minutes, ~2,600 and ~2,800 matches each): RSS 2.9 and 2.8 KiB/match (second halves
1.4 and 1.8) against 3.2 and 3.3 (2.1 and 2.3); bytes held free in the malloc
heap 2.0 and 1.8 against 2.5 and 2.5. A small gain, seen twice; not flat.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
from collections.abc import Callable

_M_ARENA_MAX = -8  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
ARENAS = 2  # serve's malloc arenas (glibc's default: up to 8 per core)
MMAP_THRESHOLD = 128 * 1024  # glibc's default start; fixed, it no longer climbs


def _set_malloc_parameter(variable: str, tunable: str, parameter: int, value: int) -> bool:
    """glibc's `mallopt(parameter, value)` for this process, unless the operator set
    that parameter by its variable or by its glibc tunable (GLIBC_TUNABLES=name=value:
    ...); whether it was set (False too on a C library without mallopt)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if variable in os.environ or any(item.split("=", 1)[0] == tunable
                                     for item in tunables.split(":")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(parameter, value))


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at `arenas` for this process (as MALLOC_ARENA_MAX
    would), unless the operator set it (MALLOC_ARENA_MAX or glibc.malloc.arena_max);
    whether the cap was set. Each thread that allocates may get an arena of its own,
    and freed holes stay in each of them: fewer arenas, less memory held by serve's
    thread pools. Call it before the threads start (arenas made before stay)."""
    return _set_malloc_parameter("MALLOC_ARENA_MAX", "glibc.malloc.arena_max",
                                 _M_ARENA_MAX, arenas)


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes for this process (as
    MALLOC_MMAP_THRESHOLD_ would), unless the operator set it (MALLOC_MMAP_THRESHOLD_
    or glibc.malloc.mmap_threshold); whether it was set. glibc starts it at 128 KiB
    and raises it to the size of each larger mmapped block freed: after one of
    SQLite's sort buffers (the module docstring) or a rendered page was freed, every
    block up to that size comes from the arenas, and blocks that big, of sizes that
    change from one request to the next, leave holes there. Fixed, a block above it
    is mapped on its own and unmapped when freed."""
    return _set_malloc_parameter("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold",
                                 _M_MMAP_THRESHOLD, threshold)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # this process's own C library
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class FreedMemory:
    """Gives freed memory back after each match (`after_match`, an `Arena.on_stored`
    hook); `released` counts the trims done."""

    def __init__(self) -> None:
        self._trim = _malloc_trim()
        self._busy = False
        self.released = 0

    @property
    def available(self) -> bool:
        """Whether the C library can give memory back (glibc)."""
        return self._trim is not None

    def after_match(self, _record: object = None) -> None:
        """On the loop, at once: a trim in a worker thread, unless one is running."""
        if self._trim is None or self._busy:
            return
        self._busy = True
        try:
            asyncio.get_running_loop().run_in_executor(None, self.release)
        except RuntimeError:  # the executor is shut down (the process is ending)
            self._busy = False

    def release(self) -> None:
        """Give the allocator's free pages back now (blocks for the trim)."""
        try:
            if self._trim is not None:
                self._trim(0)
                self.released += 1
        finally:
            self._busy = False
