#!/usr/bin/env python3
"""What a sandbox's cgroups cost: to make and remove them, to start and stop a
sandbox with and without them, and the watchdog's poll.

Interleaved in one run (as root, on a machine with cgroup v1's memory, pids and
cpuacct controllers), medians of `--repeat` tries each:
- cgroups alone: `cgroups.create` + `remove` of one sandbox's three cgroups;
- a sandbox: `BotProcess` running `/bin/true`, from `start()` to `stop()` done,
  with its cgroups and without (as where the machine has none);
- per match: a fork server's `LimitWatch.count_from_now` (read the baseline, move the
  limits), and one watchdog poll of `--sandboxes` idle sandboxes (each `sleep`)
  by their cgroups and by /proc.

    python benchmarks/sandbox_start.py [--repeat 30] [--sandboxes 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from cfarena.server.sandbox import BotProcess, LimitWatch, SandboxLimits, cgroups, python_paths

MIB = 1024 * 1024


@contextlib.contextmanager
def without_cgroups() -> Iterator[None]:
    """Sandboxes made meanwhile get no cgroups, as on a machine that has none."""
    real = cgroups._support
    cgroups._support = functools.cache(  # type: ignore[assignment]
        lambda: cgroups.Support({}, "benchmark"))
    try:
        yield
    finally:
        cgroups._support = real  # type: ignore[assignment]


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.2f} ms (min {min(samples) * 1000:.2f})"


async def sandbox_once(tmp: Path, command: list[str]) -> BotProcess:
    proc = BotProcess("bench", command, {"PATH": "/usr/bin:/bin"}, binds=python_paths(),
                      limits=SandboxLimits(), workdir=tmp)
    await proc.start()
    return proc


async def start_stop(tmp: Path) -> float:
    started = time.perf_counter()
    proc = await sandbox_once(tmp, ["/bin/true"])
    await proc.wait()
    await proc.stop()
    return time.perf_counter() - started


async def polls(tmp: Path, count: int, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds per `count_from_now` and per watchdog poll of `count` idle sandboxes."""
    procs = [await sandbox_once(tmp, ["sleep", "60"]) for _ in range(count)]
    watch = LimitWatch(interval=3600)  # polled here, by hand
    try:
        for proc in procs:
            watch.watch(proc)
        await asyncio.sleep(0.3)
        child: list[float] = []
        poll: list[float] = []
        for _ in range(repeat):
            t = time.perf_counter()
            watch.count_from_now(procs[0])
            child.append(time.perf_counter() - t)
            t = time.perf_counter()
            watch.check()
            poll.append(time.perf_counter() - t)
        assert all(p.breach is None for p in procs)
        return child, poll
    finally:
        await asyncio.gather(*(p.stop() for p in procs))
        await watch.close()


def make_and_remove() -> float:
    """Seconds to make one sandbox's cgroups (limits set) and remove them."""
    started = time.perf_counter()
    group = cgroups.create(512 * MIB, 66)
    assert group is not None and group.remove()
    return time.perf_counter() - started


async def main(repeat: int, sandboxes: int) -> None:
    print(cgroups.available())
    if not all(cgroups.defences().values()):
        sys.exit("this benchmark needs the cgroups (as root, cgroup v1)")
    made: list[float] = []
    with_cg: list[float] = []
    without_cg: list[float] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for _ in range(repeat):
            made.append(make_and_remove())
            with_cg.append(await start_stop(tmp))
            with without_cgroups():
                without_cg.append(await start_stop(tmp))
        child, poll_cg = await polls(tmp, sandboxes, repeat)
        with without_cgroups():
            _, poll_proc = await polls(tmp, sandboxes, repeat)
    print(f"median of {repeat}:")
    print(f"  cgroups of one sandbox, made and removed:    {ms(made)}")
    print(f"  sandbox (/bin/true) start to stop, cgroups:  {ms(with_cg)}")
    print(f"  the same without cgroups:                    {ms(without_cg)}")
    extra = statistics.median(with_cg) - statistics.median(without_cg)
    print(f"  -> cgroups add {extra * 1000:+.2f} ms per sandbox")
    print(f"  fork server, count_from_now (per match):         {ms(child)}")
    print(f"  one poll of {sandboxes} sandboxes, by cgroups:        {ms(poll_cg)}")
    print(f"  one poll of {sandboxes} sandboxes, by /proc:          {ms(poll_proc)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sandboxes", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.repeat, args.sandboxes))
