#!/usr/bin/env python3
"""How long `cfarena` takes to start: `cfarena --help`, `cfarena replay --help` and
`cfarena standings --help`, each run of an old executable (`--baseline`, e.g. the
main checkout's) and of this checkout's, interleaved in one run; the median wall
time of `--repeat` runs each, in seconds.

    python benchmarks/cli_start.py --baseline /work/main/.venv/bin/cfarena [--repeat 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (["--help"], ["replay", "--help"], ["standings", "--help"])


def run_once(executable: str, args: list[str]) -> float:
    """Seconds from starting `executable args` to its exit (it must exit 0)."""
    started = time.perf_counter()
    subprocess.run([executable, *args], check=True, stdout=subprocess.DEVNULL,
                   env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"})
    return time.perf_counter() - started


def main(baseline: str, new: str, repeat: int) -> None:
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        for args in COMMANDS:
            for label, executable in (("old", baseline), ("new", new)):
                times.setdefault((" ".join(args), label), []).append(run_once(executable, args))
    print(f"median of {repeat} runs, seconds (old: {baseline}, new: {new})")
    print(f"{'command':28} {'old':>7} {'new':>7}")
    for args in COMMANDS:
        shown = " ".join(args)
        old = statistics.median(times[(shown, "old")])
        now = statistics.median(times[(shown, "new")])
        print(f"{'cfarena ' + shown:28} {old:7.3f} {now:7.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the old `cfarena` executable")
    parser.add_argument("--new", default=shutil.which("cfarena")
                        or str(Path(sys.executable).with_name("cfarena")),
                        help="the new `cfarena` executable (default: this venv's)")
    parser.add_argument("--repeat", type=int, default=15, help="runs of each command")
    options = parser.parse_args()
    main(options.baseline, options.new, options.repeat)
