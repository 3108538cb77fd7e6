#!/usr/bin/env python3
"""What a fork server's start costs, old and new, and what its children import.

1. CPU per fork-server start: a real `ForkServer` (its sandbox, `python -I -m
   cfarena.sdk.forkserver --preload cfarena.bots.greedy`) from `start()` until the
   runtime is loaded and the server reports ready, by the sandbox's cpuacct cgroup
   (bwrap and the fork server), and the same as wall time. Interleaved in one run:
   this checkout ("new") and the SDK and bots of a git ref ("old", default main,
   taken with `git archive`). Each runs on this interpreter through a venv of its
   own whose only import paths are its tree's client_sdk/ and bots/ and this
   interpreter's site-packages (so both start alike; the editable install's
   other .pth files are left out of both).
2. `--child-imports`: what a forked child imports after the fork. A real
   tournament (`cfarena run-tournament`, greedy against random, sandboxed, fork
   servers as usual) whose fork servers run under `-X importtime`; a child's
   stderr is its seat's log, so every `import time:` line there is a module that
   child imported after it was forked. Also plays a probe bot that imports
   `decimal`, to show that the check sees a child's imports.

    python benchmarks/forkserver_start.py [--old-ref main] [--repeat 20] [--child-imports]

Needs root and cgroup v1's cpuacct (as the arena's sandboxes do).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import io
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from cfarena.server.sandbox import LimitWatch, cgroups, python_paths
from cfarena.server.tournament.forks import MODULE as FORK_MODULE
from cfarena.server.tournament.forks import ForkServer

ROOT = Path(__file__).resolve().parent.parent
PRELOAD = ("cfarena.bots.greedy",)
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}


def tree_of(ref: str, into: Path) -> Path:
    """client_sdk/ and bots/ of git `ref`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "client_sdk", "bots"],
                             check=True, capture_output=True).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # (our own archive; Debian's 3.11.2, the test venv's, has no extraction filters)
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return into


def venv_for(tree: Path, at: Path, *, uncached: tuple[str, ...] = ()) -> Path:
    """A venv running this interpreter with `tree`'s SDK and bots and this site-packages;
    `tree` compiled, but for the `uncached` modules (as where nothing imported them
    outside a sandbox, which shows them read-only: a fresh checkout, before this
    arena cached them itself)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(at)], check=True)
    site = at / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    paths = [tree / "bots", tree / "client_sdk", Path(sysconfig.get_paths()["purelib"])]
    (site / "_bench.pth").write_text("".join(f"{p}\n" for p in paths))
    python = at / "bin" / "python"
    # compile once, as an installed tree is (the sandbox cannot write __pycache__)
    subprocess.run([str(python), "-I", "-m", "compileall", "-q", str(tree / "bots"),
                    str(tree / "client_sdk")], check=True)
    for module in uncached:
        top = "bots" if module.startswith("cfarena.bots") else "client_sdk"
        source = tree / top / (module.replace(".", "/") + ".py")
        Path(importlib.util.cache_from_source(str(source))).unlink()
    return python


@contextlib.contextmanager
def interpreter(python: Path) -> Iterator[None]:
    """ForkServer starts `sys.executable`: this one, meanwhile."""
    real = sys.executable
    sys.executable = str(python)
    try:
        yield
    finally:
        sys.executable = real


async def start_once(python: Path, binds: list[Path], workdir: Path) -> tuple[float, float]:
    """CPU seconds (the sandbox's cgroup) and wall seconds until the fork server is ready."""
    watch = LimitWatch(interval=3600)
    with interpreter(python):
        server = ForkServer("bench", "bench#fork", ENV, watch, preload=PRELOAD, binds=binds,
                            workdir=workdir)
    try:
        started = time.perf_counter()
        with interpreter(python):
            await server.start(60.0)
        wall = time.perf_counter() - started
        assert server.sandbox is not None and server.sandbox.cgroup is not None
        cpu = server.sandbox.cgroup.cpu_ns() / 1e9
    finally:
        await server.stop()
        await watch.close()
    return cpu, wall


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms (min {min(samples) * 1000:6.1f})"


async def starts(repeat: int, old_ref: str) -> None:
    if not cgroups.defences()["cpu_cgroup"]:
        sys.exit("this benchmark needs cgroup v1's cpuacct controller (as root)")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp_dir:
        tmp = Path(tmp_dir)
        tmp.chmod(0o755)  # the sandbox's user reads it
        old = tree_of(old_ref, tmp / "old")
        fresh = tree_of(old_ref, tmp / "old-fresh")
        pythons = {
            f"old ({old_ref})": venv_for(old, tmp / "venv-old"),
            "new (this checkout)": venv_for(ROOT, tmp / "venv-new"),
            f"old, no .pyc of {FORK_MODULE} and the bot": venv_for(
                fresh, tmp / "venv-fresh", uncached=(FORK_MODULE, *PRELOAD)),
        }
        work = tmp / "work"
        work.mkdir()
        binds = [*python_paths(), tmp]
        cpu: dict[str, list[float]] = {name: [] for name in pythons}
        wall: dict[str, list[float]] = {name: [] for name in pythons}
        for python in pythons.values():  # a first start of each, not counted
            await start_once(python, binds, work)
        for _ in range(repeat):
            for name, python in pythons.items():
                c, w = await start_once(python, binds, work)
                cpu[name].append(c)
                wall[name].append(w)
    print(f"fork server start to ready (preload {', '.join(PRELOAD)}), median of {repeat}:")
    for name in pythons:
        print(f"  {name:50s} CPU {ms(cpu[name])}   wall {ms(wall[name])}")
    old_cpu, new_cpu, fresh_cpu = cpu.values()
    print("  (differences: of the medians; in brackets the median of the differences "
          "within each round, which the machine's drift moves less)")
    print(f"  -> new - old: CPU per start {diff(new_cpu, old_cpu)} "
          f"({(statistics.median(new_cpu) / statistics.median(old_cpu) - 1) * 100:+.1f} %)")
    print(f"  -> compiling what the sandbox cannot cache: {diff(fresh_cpu, old_cpu)} per start "
          "(what the arena's cache_bytecode now saves a fresh checkout)")


def diff(a: list[float], b: list[float]) -> str:
    paired = statistics.median(x - y for x, y in zip(a, b, strict=True))
    return (f"{(statistics.median(a) - statistics.median(b)) * 1000:+.1f} ms "
            f"[{paired * 1000:+.1f} ms]")


PROBE = """\
import decimal  # noqa: F401  (not in the fork server: the check must see it)

from cfarena.bots.greedy import GreedyBot


class Probe(GreedyBot):
    pass
"""


def child_imports() -> None:
    """Play a small sandboxed tournament whose fork servers run under -X importtime and
    print what each child imported after its fork (from the seats' logs)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp_dir:
        tmp = Path(tmp_dir)
        (tmp / "probe").mkdir()
        (tmp / "probe" / "probe.py").write_text(PROBE)
        logs = tmp / "logs"
        subprocess.run(
            [sys.executable, __file__, "--_tournament", "run-tournament",
             "--bot", "greedy", "--bot", "random",
             "--bot", f"probe=python -m cfarena.sdk run {tmp / 'probe' / 'probe.py'}:Probe",
             "--players", "3", "--games", "2", "--db", f"sqlite:///{tmp / 'bench.db'}",
             "--log-dir", str(logs)], check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        imported: dict[str, Counter[str]] = {}
        for log in sorted(logs.iterdir()):
            bot = log.stem.rsplit("-", 1)[1]
            names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$",
                               log.read_text(), re.MULTILINE)
            imported.setdefault(bot, Counter()).update(names)
            imported[bot]["(children)"] += 1
    print("modules a forked child imported after its fork (count over its children):")
    for bot, counted in sorted(imported.items()):
        children = counted.pop("(children)")
        shown = ", ".join(f"{n} x{c}" for n, c in sorted(counted.items())) or "none"
        print(f"  {bot} ({children} children): {shown}")


def _tournament(argv: list[str]) -> None:
    """`cfarena ARGV` with every fork server started under -X importtime."""
    from cfarena.server.cli import main
    from cfarena.server.sandbox import BotProcess
    from cfarena.server.tournament import forks

    def flagged(label: str, command: list[str], *args: object, **kwargs: object
                ) -> BotProcess:
        return BotProcess(label, [command[0], "-X", "importtime", *command[1:]],
                          *args, **kwargs)  # type: ignore[arg-type]

    forks.BotProcess = flagged  # type: ignore[attr-defined,assignment]
    sys.argv = ["cfarena", *argv]
    main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--_tournament"]:
        _tournament(sys.argv[2:])
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-ref", default="main", help="git ref of the old SDK (main)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--child-imports", action="store_true",
                        help="also show what forked children import after the fork")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("this benchmark needs bubblewrap")
    asyncio.run(starts(args.repeat, args.old_ref))
    if args.child_imports:
        child_imports()
