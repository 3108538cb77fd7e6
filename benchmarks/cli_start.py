#!/usr/bin/env python3
"""How long `cfarena` takes to start: `cfarena --help` and the help of `replay`,
`standings`, `matches`, `bots` and `worker`; with `--db`, commands on a SQLite database
(each executable its own, made by its `bots add`): `matches`, `standings`, `worker`
(which refuses SQLite once it has started), `serve --max-matches 0` without and with
`--http-port` (it starts, listens, and stops at once), `run-tournament` again on the
database where it finished (it reports the finished one), and `run-tournament` on a
fresh SQLite file each run (a 2-player, 1-deal tournament of two unsandboxed bundled bots:
migrating the new file and the two matches, bots included). Each run of an old
executable (`--baseline`, e.g. the main checkout's) and of this checkout's, interleaved
in one run; the median wall time and CPU time (user + system of the process and all it
waited for, bots included; less sensitive to a busy machine) of `--repeat` runs each,
in seconds.

    python benchmarks/cli_start.py --baseline /work/main/.venv/bin/cfarena [--repeat 15] [--db]
"""

from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = (["--help"], ["replay", "--help"], ["standings", "--help"], ["matches", "--help"],
            ["bots", "--help"], ["worker", "--help"])
TOURNAMENT = ["run-tournament", "--bot", "random", "--bot", "greedy", "--players", "2",
              "--games", "1", "--no-sandbox", "--concurrency", "1", "--seed", "1"]
FRESH = "fresh"  # stands for a new SQLite file in a command

ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "80"}


def run_once(executable: str, args: list[str], ok: tuple[int, ...]) -> tuple[float, float]:
    """Seconds from starting `executable args` to its exit (with a status in `ok`), and
    the CPU seconds it and what it waited for used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([executable, *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=ENV, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise SystemExit(f"{executable} {' '.join(args)}: exit {done.returncode}\n"
                         f"{done.stderr.decode(errors='replace')}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(baseline: str, new: str, repeat: int, with_db: bool) -> None:
    fresh_files = itertools.count()
    with tempfile.TemporaryDirectory(prefix="cli-start-") as tmp:
        # (args, exit statuses that are success)
        commands: dict[str, list[tuple[list[str], tuple[int, ...]]]] = {
            label: [(list(args), (0,)) for args in COMMANDS] for label in ("old", "new")}
        if with_db:
            for label, executable in (("old", baseline), ("new", new)):
                url = f"sqlite:///{Path(tmp) / label}.db"
                db = ["--db", url]
                for setup in (["bots", "add", "someone", *db], [*TOURNAMENT, *db]):
                    run_once(executable, setup, (0,))
                serve = ["serve", "--max-matches", "0", "--port", "0", *db]
                commands[label] += [
                    (["matches", *db], (0,)), (["standings", *db], (0,)),
                    (["worker", *db], (2,)),  # refused: workers need PostgreSQL
                    (serve, (0,)), ([*serve, "--http-port", "0"], (0,)),
                    ([*TOURNAMENT, *db], (0,)), ([*TOURNAMENT, "--db", FRESH], (0,))]
        times: dict[tuple[int, str], list[tuple[float, float]]] = {}
        for _ in range(repeat):
            for i in range(len(commands["new"])):
                for label, executable in (("old", baseline), ("new", new)):
                    args, ok = commands[label][i]
                    args = [f"sqlite:///{tmp}/fresh{next(fresh_files)}.db" if a == FRESH
                            else a for a in args]
                    times.setdefault((i, label), []).append(run_once(executable, args, ok))
    print(f"median of {repeat} runs, seconds (old: {baseline}, new: {new})")
    print(f"{'command':62} {'old wall':>9} {'new wall':>9} {'old cpu':>9} {'new cpu':>9}")
    for i, (args, _ok) in enumerate(commands["new"]):
        shown = " ".join("DB" if a.startswith("sqlite:") else "FRESH" if a == FRESH else a
                         for a in args)
        if args[0] == "run-tournament":
            shown = shown.replace(" ".join(TOURNAMENT[1:]), "(2 bots)")
        row = [statistics.median(t[k] for t in times[(i, label)])
               for k in (0, 1) for label in ("old", "new")]
        print(f"{'cfarena ' + shown:62}" + "".join(f" {x:9.3f}" for x in row))


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
