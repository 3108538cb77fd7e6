"""serve gives the allocator's freed memory back after each stored match
(`ops.memory.FreedMemory`, issue 21): the trim runs off the loop, one at a time, and
gives back what a burst of large allocations left free."""

from __future__ import annotations

import asyncio
import ctypes
import os
import subprocess
import sys
import threading

from benchmarks.soak import rss_kib
from cfarena.server.ops.memory import FreedMemory


def test_a_stored_match_starts_one_trim_in_a_worker_thread() -> None:
    memory = FreedMemory()
    assert memory.available  # glibc: the suite's machines
    real_trim = memory._trim
    assert real_trim is not None
    gate = threading.Event()
    threads: list[int] = []

    def held_trim(pad: int) -> int:  # the real trim, after the test lets it go
        threads.append(threading.get_ident())
        gate.wait(10)
        return real_trim(pad)

    memory._trim = held_trim

    async def matches_stored() -> None:
        memory.after_match()
        memory.after_match()  # while the first trim runs: not a second one
        await asyncio.sleep(0.05)
        assert len(threads) == 1 and memory.released == 0
        gate.set()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if memory.released:
                break
        memory.after_match()  # the first is done: another
        for _ in range(200):
            await asyncio.sleep(0.01)
            if memory.released == 2:
                break

    asyncio.run(matches_stored())
    assert memory.released == 2
    assert threading.get_ident() not in threads  # never on the loop's thread


def test_the_trim_gives_back_what_freed_blocks_hold() -> None:
    # 2000 blocks of 60 kB (under glibc's mmap threshold: in the heap), every other
    # one kept: the freed half stays resident until it is trimmed
    blocks = [ctypes.create_string_buffer(60_000) for _ in range(2000)]
    for block in blocks:
        ctypes.memset(block, 1, len(block))
    del blocks[::2]
    before = rss_kib(os.getpid())
    FreedMemory().release()
    after = rss_kib(os.getpid())
    assert before - after > 30_000, (before, after)  # of ~60 MB freed


def _without_malloc_settings() -> dict[str, str]:
    """This environment without an operator's malloc settings (MALLOC_*, glibc's
    tunables)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def test_serve_caps_the_malloc_arenas_unless_the_operator_did() -> None:
    """`limit_arenas` sets glibc's M_ARENA_MAX (serve calls it first), and leaves an
    operator's MALLOC_ARENA_MAX or glibc.malloc.arena_max tunable alone."""
    code = "from cfarena.server.ops.memory import limit_arenas; print(limit_arenas())"
    env = _without_malloc_settings()
    for extra, said in (({}, "True"), ({"MALLOC_ARENA_MAX": "4"}, "False"),
                        ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, "False"),
                        ({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}, "True")):
        done = subprocess.run([sys.executable, "-c", code], env={**env, **extra},
                              capture_output=True, text=True, timeout=60, check=True)
        assert done.stdout.strip() == said, done.stderr


_BIG_BLOCK_AFTER_A_BIGGER_ONE = """
import ctypes, sys
from cfarena.server.ops.memory import fix_mmap_threshold

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
               "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
if sys.argv[1] == "fixed":
    assert fix_mmap_threshold()
libc.free(libc.malloc(1 << 20))  # a 1 MiB block, mapped on its own, freed
before = libc.mallinfo2().hblkhd
block = libc.malloc(300 << 10)  # then a 300 KiB one
mapped = (libc.mallinfo2().hblkhd - before) >> 10  # KiB of it mapped on its own
libc.free(block)
print(mapped, (libc.mallinfo2().hblkhd - before) >> 10)  # and still mapped once freed
"""


def test_serve_fixes_the_mmap_threshold_so_big_blocks_stay_out_of_the_arenas() -> None:
    """glibc raises its mmap threshold to the size of a mapped block once it is freed,
    after which a 300 KiB block comes from the arenas (and leaves a hole there);
    with `fix_mmap_threshold` (serve calls it first) it is still mapped on its own and
    given back when freed. An operator's MALLOC_MMAP_THRESHOLD_ or glibc.malloc.mmap_threshold
    tunable is left alone."""
    env = _without_malloc_settings()
    mapped, kept = {}, {}
    for how in ("default", "fixed"):
        done = subprocess.run([sys.executable, "-c", _BIG_BLOCK_AFTER_A_BIGGER_ONE, how],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        mapped[how], kept[how] = (int(n) for n in done.stdout.split())
    assert mapped["default"] == 0, mapped  # glibc's own threshold had climbed past it
    assert mapped["fixed"] >= 300, mapped
    assert kept == {"default": 0, "fixed": 0}, kept  # a mapped block is unmapped when freed
    code = "from cfarena.server.ops.memory import fix_mmap_threshold as f; print(f())"
    for extra in ({"MALLOC_MMAP_THRESHOLD_": "65536"},
                  {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=65536"}):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                              text=True, env={**env, **extra}, timeout=60, check=True)
        assert done.stdout.strip() == "False", (extra, done.stderr)
