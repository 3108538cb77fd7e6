"""Hostile bot: carries its hand to its next rotation through the host's page cache.

In a duplicate tournament the hand this bot holds in one rotation is its opponent's
in the next. The page cache belongs to the host and outlives every process, so at
its first Turn the bot looks for a hand left there by a process of an earlier
rotation, then leaves its own: one bit per page of a region of a large file it can
read, cached = 1.

- The file: its own (`--name=/path/to/file`, named on its command line, so the
  sandbox binds it read-only) or, with `--name=usr` (or `--name=timing`), the
  largest library under /usr (`usr_file`): no file of its own needed.
- Writing: `posix_fadvise(POSIX_FADV_RANDOM)` (no readahead), then one byte read
  from each page whose bit is 1. Manchester code (bit b is the page pair b, 1-b)
  and a 16-bit sync word, so a region cached or uncached as a whole reads as
  nothing.
- Reading, after the seccomp filter took `mincore`, `cachestat`, RWF_NOWAIT and
  the evictions: the strongest probe left. The region is mapped at a 64 KiB
  aligned address; touching the first page of each 64 KiB window makes the
  kernel map every page of the window that is cached (fault-around, no I/O),
  and /proc/self/pagemap tells which are mapped. `--name=timing` times a one-byte
  read of each page instead (cached ~µs, uncached a disk read), the pair's faster
  page being the 1; that read loads the page, so then only the second rotation
  (seat 1) reads, and the first only writes.
- It also calls each probe and eviction the filter refuses, and reports the errno.

It prints `PROBE <name>: <json>` lines (seccomp, read, wrote) and plays random legal
moves.
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import random
import struct
import sys
import time
from pathlib import Path

from cfarena.engine.moves import Move
from cfarena.engine.tiles import Tile
from cfarena.sdk import Bot
from cfarena.sdk.types import Turn

PAGE = mmap.PAGESIZE
WINDOW = 16  # pages the kernel maps around a fault (fault_around_bytes, 64 KiB)
MAX_PIPS = 18
HAND_BITS = (MAX_PIPS + 1) * (MAX_PIPS + 2) // 2  # one per tile of a double-18 set
SYNC = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1]
BITS = len(SYNC) + HAND_BITS
DATA_PAGES = 2 * BITS  # Manchester: two pages a bit
WINDOWS = -(-DATA_PAGES // (WINDOW - 1))  # the first page of each window is touched
REGION = WINDOWS * WINDOW * PAGE

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.syscall.restype = ctypes.c_long
MAP_FAILED = ctypes.c_void_p(-1).value


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def usr_file() -> Path:
    """The largest shared library under /usr/lib (by size, then name): a file no
    other process is likely to read."""
    found: list[tuple[int, str]] = []
    for directory in sorted({"/usr/lib", *map(str, Path("/usr/lib").glob("*-linux-gnu*"))}):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if ".so" in entry.name and entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                if size >= 8 * REGION:
                    found.append((size, entry.path))
    if not found:
        raise SystemExit("page_cache.py: no library of 16 MiB or more under /usr/lib")
    return Path(max(found)[1])


def target() -> tuple[Path, bool]:
    """The file to use and whether to time reads (from `--name`)."""
    value = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--name=")), "usr")
    if value in ("usr", "timing"):
        return usr_file(), value == "timing"
    return Path(value), False


def region_offset(size: int) -> int:
    """Where the region lies: the middle of the file, 64 KiB aligned."""
    return (size // 2) // (WINDOW * PAGE) * (WINDOW * PAGE)


def data_page(i: int) -> int:
    """The page (within the region) of Manchester page i."""
    return (i // (WINDOW - 1)) * WINDOW + 1 + i % (WINDOW - 1)


def tile_index(tile: Tile) -> int:
    return sum(MAX_PIPS + 1 - i for i in range(tile.a)) + tile.b - tile.a


def index_tile(index: int) -> str:
    for a in range(MAX_PIPS + 1):
        row = MAX_PIPS + 1 - a
        if index < row:
            return f"{a}-{a + index}"
        index -= row
    raise ValueError(index)


def encode(hand: tuple[Tile, ...]) -> list[int]:
    bits = [0] * HAND_BITS
    for tile in hand:
        bits[tile_index(tile)] = 1
    pages: list[int] = []
    for bit in SYNC + bits:
        pages += [bit, 1 - bit]
    return pages


def decode(pair_bits: list[int | None]) -> list[str] | None:
    """The hand carried by decoded bits (None for a broken pair), or None if the sync
    word is not there or a hand bit is broken."""
    if pair_bits[:len(SYNC)] != SYNC or any(b is None for b in pair_bits):
        return None
    return [index_tile(i) for i, b in enumerate(pair_bits[len(SYNC):]) if b]


# ------------------------------------------------------------------ read and write
def cached_by_fault_around(fd: int, offset: int) -> list[int]:
    """Which pages of the region are cached (1), by fault-around and /proc/self/pagemap."""
    align = WINDOW * PAGE
    reserve = libc.mmap(None, REGION + align, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if reserve in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap reserve")
    base = (reserve + align - 1) // align * align
    fixed = 0x10  # MAP_FIXED, inside the reservation
    addr = libc.mmap(base, REGION, mmap.PROT_READ, mmap.MAP_SHARED | fixed, fd, offset)
    try:
        if addr in (None, MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap file")
        libc.madvise(addr, REGION, 1)  # MADV_RANDOM: a fault reads one page, no more
        for window in range(WINDOWS):
            ctypes.c_char.from_address(addr + window * WINDOW * PAGE).value  # noqa: B018
        pages = REGION // PAGE
        with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            raw = os.pread(pagemap.fileno(), 8 * pages, (addr // PAGE) * 8)
        return [(struct.unpack_from("<Q", raw, 8 * k)[0] >> 63) & 1 for k in range(pages)]
    finally:
        libc.munmap(reserve, REGION + align)


def cached_by_timing(fd: int, offset: int) -> list[float]:
    """How long a one-byte read of each page took, in µs (first pages of windows: 0)."""
    taken = [0.0] * (REGION // PAGE)
    for i in range(DATA_PAGES):
        page = data_page(i)
        started = time.perf_counter_ns()
        os.pread(fd, 1, offset + page * PAGE)
        taken[page] = (time.perf_counter_ns() - started) / 1000
    return taken


def read_region(fd: int, offset: int, timing: bool) -> dict[str, object]:
    if timing:
        taken = cached_by_timing(fd, offset)
        pairs: list[int | None] = []
        for k in range(BITS):
            a, b = taken[data_page(2 * k)], taken[data_page(2 * k + 1)]
            # the faster page of the pair is the cached one: 1 if it is the first
            pairs.append(None if max(a, b) < 4 * min(a, b) else int(a < b))
        raw = [int(taken[data_page(2 * k)] < taken[data_page(2 * k + 1)])
               for k in range(BITS)]
        return {"guess": decode(pairs), "raw_bits": raw,
                "valid_pairs": sum(p is not None for p in pairs)}
    cached = cached_by_fault_around(fd, offset)
    pairs = []
    for k in range(BITS):
        a, b = cached[data_page(2 * k)], cached[data_page(2 * k + 1)]
        pairs.append(a if a != b else None)
    return {"guess": decode(pairs), "raw_bits": [cached[data_page(2 * k)] for k in range(BITS)],
            "valid_pairs": sum(p is not None for p in pairs),
            "cached_pages": sum(cached[data_page(i)] for i in range(DATA_PAGES))}


def write_region(fd: int, offset: int, hand: tuple[Tile, ...]) -> None:
    for i, bit in enumerate(encode(hand)):
        if bit:
            os.pread(fd, 1, offset + data_page(i) * PAGE)


# ------------------------------------------------------------------ the filter
def _errno_of(result: int) -> str:
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def refused_calls(fd: int, offset: int) -> dict[str, str]:
    """Each probe or eviction the sandbox's filter refuses, called: its errno or "ok"."""
    nr = {"mincore": 27, "readahead": 187, "fadvise64": 221, "preadv2": 327,
          "pwritev2": 328, "io_setup": 206, "io_uring_setup": 425, "process_madvise": 440,
          "cachestat": 451}
    out: dict[str, str] = {}
    buf = ctypes.create_string_buffer(PAGE)
    iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), ctypes.c_void_p(PAGE))

    def call(name: str, *args: object) -> str:
        return _errno_of(libc.syscall(nr[name], *args))

    addr = libc.mmap(None, WINDOW * PAGE, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    vec = ctypes.create_string_buffer(WINDOW)
    out["mincore"] = call("mincore", ctypes.c_void_p(addr), ctypes.c_size_t(WINDOW * PAGE), vec)
    for name, advice in (("MADV_WILLNEED", 3), ("MADV_COLD", 20), ("MADV_PAGEOUT", 21),
                         ("MADV_COLLAPSE", 25)):
        out[name] = _errno_of(libc.madvise(addr, WINDOW * PAGE, advice))
    out["MADV_DONTNEED (allowed)"] = _errno_of(libc.madvise(addr, WINDOW * PAGE, 4))
    libc.munmap(addr, WINDOW * PAGE)
    # cachestat(fd, &range{off, len}, &stat, 0)
    rng = (ctypes.c_uint64 * 2)(offset, WINDOW * PAGE)
    stat = (ctypes.c_uint64 * 5)()
    out["cachestat"] = call("cachestat", fd, rng, stat, 0)
    for label, flags in (("RWF_NOWAIT", 0x08), ("RWF_DONTCACHE", 0x80)):
        out[f"preadv2 {label}"] = call("preadv2", fd, iov, 1, ctypes.c_long(offset), 0, flags)
    out["preadv2 (allowed)"] = call("preadv2", fd, iov, 1, ctypes.c_long(offset), 0, 0)
    with open("/tmp/.page-cache-probe", "wb") as scratch:
        out["pwritev2 RWF_NOWAIT"] = call("pwritev2", scratch.fileno(), iov, 1, 0, 0, 0x08)
    for label, advice in (("POSIX_FADV_WILLNEED", 3), ("POSIX_FADV_DONTNEED", 4),
                          ("POSIX_FADV_NOREUSE", 5), ("POSIX_FADV_RANDOM (allowed)", 1)):
        out[label] = call("fadvise64", fd, ctypes.c_long(offset), ctypes.c_long(PAGE), advice)
    out["readahead"] = call("readahead", fd, ctypes.c_long(offset), ctypes.c_size_t(PAGE))
    out["process_madvise"] = call("process_madvise", -1, iov, 1, 21, 0)
    params = ctypes.create_string_buffer(120)
    out["io_uring_setup"] = call("io_uring_setup", 4, params)
    context = ctypes.c_ulong(0)
    out["io_setup"] = call("io_setup", 4, ctypes.byref(context))
    return out


class PageCacheCarrier(Bot):
    def __init__(self) -> None:
        self.done = False

    def choose(self, turn: Turn) -> Move:
        if not self.done:
            self.done = True
            self.carry(turn)
        return random.choice(turn.legal_moves)

    def carry(self, turn: Turn) -> None:
        path, timing = target()
        fd = os.open(path, os.O_RDONLY)
        try:
            offset = region_offset(os.fstat(fd).st_size)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            if timing and turn.observation.seat == 0:
                # a timed read loads what it reads: the first rotation (seat 0 of a
                # 2-player table, as the seat order tells) only writes
                write_region(fd, offset, turn.hand)
                probe("wrote", {"hand": sorted(str(t) for t in turn.hand)})
                return
            started = time.perf_counter()
            seen = read_region(fd, offset, timing)
            seen.update(file=str(path), mode="timing" if timing else "fault-around",
                        seconds=round(time.perf_counter() - started, 4),
                        hand=sorted(str(t) for t in turn.hand))
            probe("read", seen)
            if seen["guess"] is None:  # nothing there: leave this hand for the next one
                write_region(fd, offset, turn.hand)
                check = read_region(fd, offset, False) if not timing else {"guess": None}
                probe("wrote", {"hand": sorted(str(t) for t in turn.hand),
                                "read_back": check["guess"]})
            # beyond the region: a call the filter let through must not touch the hand
            probe("seccomp", refused_calls(fd, offset + REGION + WINDOW * PAGE))
        except OSError as exc:
            probe("error", f"{errno.errorcode.get(exc.errno or 0, '?')}: {exc}")
        finally:
            os.close(fd)
