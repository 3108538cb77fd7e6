#!/usr/bin/env python3
"""How long `cfarena` takes to start: `cfarena --help` and the help of `replay`,
`standings`, `matches` and `bots`, and (`--db`) `matches` and `standings` on a SQLite
database (each executable its own, made by its `bots add`: a command that opens one,
as most do), each run of an old executable (`--baseline`, e.g. the main checkout's)
and of this checkout's, interleaved in one run; the median wall time and CPU time
(user + system, less sensitive to a busy machine) of `--repeat` runs each, in seconds.

    python benchmarks/cli_start.py --baseline /work/main/.venv/bin/cfarena [--repeat 15] [--db]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = (["--help"], ["replay", "--help"], ["standings", "--help"], ["matches", "--help"],
            ["bots", "--help"])


def run_once(executable: str, args: list[str]) -> tuple[float, float]:
    """Seconds from starting `executable args` to its exit (it must exit 0), and the
    CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([executable, *args], check=True, stdout=subprocess.DEVNULL,
                   env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(baseline: str, new: str, repeat: int, with_db: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="cli-start-") as tmp:
        commands = {label: [list(args) for args in COMMANDS]
                    for label in ("old", "new")}
        if with_db:
            for label, executable in (("old", baseline), ("new", new)):
                url = f"sqlite:///{Path(tmp) / label}.db"
                subprocess.run([executable, "bots", "add", "someone", "--db", url], check=True,
                               stdout=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
                commands[label] += [["matches", "--db", url], ["standings", "--db", url]]
        times: dict[tuple[int, str], list[tuple[float, float]]] = {}
        for _ in range(repeat):
            for i in range(len(commands["new"])):
                for label, executable in (("old", baseline), ("new", new)):
                    times.setdefault((i, label), []).append(
                        run_once(executable, commands[label][i]))
    print(f"median of {repeat} runs, seconds (old: {baseline}, new: {new})")
    print(f"{'command':28} {'old wall':>9} {'new wall':>9} {'old cpu':>9} {'new cpu':>9}")
    for i, args in enumerate(commands["new"]):
        shown = " ".join(a if not a.startswith("sqlite:") else "DB" for a in args)
        row = [statistics.median(t[k] for t in times[(i, label)])
               for k in (0, 1) for label in ("old", "new")]
        print(f"{'cfarena ' + shown:28}" + "".join(f" {x:9.3f}" for x in row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the old `cfarena` executable")
    parser.add_argument("--new", default=shutil.which("cfarena")
                        or str(Path(sys.executable).with_name("cfarena")),
                        help="the new `cfarena` executable (default: this venv's)")
    parser.add_argument("--repeat", type=int, default=15, help="runs of each command")
    parser.add_argument("--db", action="store_true",
                        help="also commands that open a SQLite database")
    options = parser.parse_args()
    main(options.baseline, options.new, options.repeat, options.db)
