#!/usr/bin/env python3
"""Wall time of tournaments through the real CLI (`cfarena run-tournament`).

1. the default run (no options: four bundled bots, standard, 4-player tables);
2. fast bots (random, greedy and a second of each, 4-player tables, 6 games:
   24 matches), the same schedule several ways in one run: sandboxed (the
   default), `--no-sandbox` (unless `--skip-no-sandbox`), and, with `--baseline
   CFARENA` (repeatable), other cfarena executables (e.g. an older checkout's
   venv/bin/cfarena) for comparison;
3. a 6-bot round-robin at 4-player tables (15 tables x 4 rotations = 60 matches).

    python benchmarks/tournament.py [--skip-six] [--skip-no-sandbox]
        [--baseline PATH/TO/cfarena]... [--repeat N]

Besides wall time, each fast-bot run's CPU time (all its processes, the
sandboxed bots included) is printed when cgroup v1's cpuacct controller is
writable (as root): wall time on a shared, noisy machine follows the load of
others, CPU time much less so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CFARENA = shutil.which("cfarena") or str(Path(sys.executable).with_name("cfarena"))
SDK = "python -m cfarena.sdk run"  # from PATH: each cfarena runs its own interpreter
FAST = ["--bot", "random", "--bot", "greedy",
        "--bot", f"random2={SDK} cfarena.bots.random_bot",
        "--bot", f"greedy2={SDK} cfarena.bots.greedy",
        "--players", "4", "--games", "6", "--seed", "5"]


CPUACCT = Path("/sys/fs/cgroup/cpuacct")
LAST_CPU: list[float] = []  # CPU seconds of the last timed run, if measured


def _cpu_group() -> Path | None:
    """A fresh cpuacct cgroup (v1) for one run, or None where none can be made."""
    group = CPUACCT / f"cfarena-bench-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def timed(args: list[str], exe: str = CFARENA) -> tuple[float, dict[str, object]]:
    env = dict(os.environ)
    # an older cfarena's bots must run on its own interpreter
    env["PATH"] = f"{Path(exe).parent}{os.pathsep}{env.get('PATH', '')}"
    group = _cpu_group()

    def join_group() -> None:  # in the child, before exec: it and all it starts are counted
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    LAST_CPU.clear()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            result = subprocess.run([exe, *args, "--json"], cwd=tmp, capture_output=True,
                                    text=True, check=False, env=env, preexec_fn=join_group)
            wall = time.perf_counter() - started
        if group is not None:
            LAST_CPU.append(int((group / "cpuacct.usage").read_text()) / 1e9)
    finally:
        if group is not None:
            time.sleep(0.2)  # the group can go once its last process has left
            with contextlib.suppress(OSError):
                group.rmdir()
    if result.returncode != 0:
        raise SystemExit(f"cfarena failed ({result.returncode}): {result.stderr[-2000:]}")
    return wall, json.loads(result.stdout)


def show(title: str, wall: float, data: dict[str, object]) -> None:
    print(f"{title}: {data['matches']} matches in {wall:.1f} s wall "
          f"({float(data['matches']) / wall:.2f} matches/s, incl. start-up)")  # type: ignore[arg-type]
    for row in data["standings"]:  # type: ignore[attr-defined]
        print(f"    {row['bot']:<11} rating {row['bt_elo']:>6} [{row['ci_low']}, {row['ci_high']}]"
              f"  pts/round {row['mean_score']}  faults {row['faults']}")


def fast_bots(baselines: list[str], repeat: int, unsandboxed: bool = True) -> None:
    """The same fast-bot schedule sandboxed, unsandboxed and on each baseline,
    interleaved `repeat` times; medians and the sandboxed run's speed relative to each."""
    modes: dict[str, tuple[list[str], str]] = {
        "sandboxed": (["run-tournament", *FAST], CFARENA),
    }
    if unsandboxed:
        modes["--no-sandbox"] = (["run-tournament", *FAST, "--no-sandbox"], CFARENA)
    for number, baseline in enumerate(baselines, 1):
        name = "baseline" if len(baselines) == 1 else f"baseline {number}"
        print(f"{name}: {baseline}")
        modes[name] = (["run-tournament", *FAST], baseline)
    walls: dict[str, list[float]] = {m: [] for m in modes}
    cpus: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(repeat):
        for mode, (args, exe) in modes.items():
            wall, data = timed(args, exe)
            walls[mode].append(wall)
            cpus[mode].extend(LAST_CPU)
    print(f"fast bots, {data['matches']} matches, median of {repeat} interleaved runs:")
    median = {m: statistics.median(w) for m, w in walls.items()}
    cpu = {m: statistics.median(c) for m, c in cpus.items() if len(c) == repeat}
    for mode, wall in median.items():
        runs = ", ".join(f"{w:.1f}" for w in walls[mode])
        used = f"   CPU {cpu[mode]:5.1f} s ({', '.join(f'{c:.1f}' for c in cpus[mode])})" \
            if mode in cpu else ""
        print(f"    {mode:<13} {wall:6.1f} s  ({runs}){used}")
    for mode in median:
        if mode != "sandboxed":
            ratio = f"    sandboxed speed relative to {mode}: " \
                    f"{median[mode] / median['sandboxed']:.2f}x wall"
            if mode in cpu and "sandboxed" in cpu:
                ratio += f", {cpu[mode] / cpu['sandboxed']:.2f}x CPU"
            print(ratio)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skip-six", action="store_true")
    ap.add_argument("--skip-no-sandbox", action="store_true")
    ap.add_argument("--baseline", action="append", default=[],
                    help="another cfarena executable to compare with (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    wall, data = timed(["run-tournament"])
    show("default run", wall, data)
    fast_bots(ns.baseline, ns.repeat, unsandboxed=not ns.skip_no_sandbox)
    if not ns.skip_six:
        bots = ["random", "greedy", "smart", "montecarlo",
                f"random2={SDK} cfarena.bots.random_bot", f"greedy2={SDK} cfarena.bots.greedy"]
        args = ["run-tournament", "--games", "1"]
        for b in bots:
            args += ["--bot", b]
        wall, data = timed(args)
        show("6 bots, 4-player tables", wall, data)


if __name__ == "__main__":
    main()
