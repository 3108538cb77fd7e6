#!/usr/bin/env python3
"""Standings on a database of many matches, old and new in one run:
`cfarena standings`, `standings --ladder`, `bots show`, and the web's data for the
leaderboard page and a bot page (`WebData.leaderboard`, `WebData.bot`).

    python benchmarks/standings.py --baseline /work/main/.venv/bin/cfarena
                                   [--matches 800] [--repeat 5] [--dir DIR]
                                   [--players 4] [--bots 6] [--baseline-schema 0009]

It builds a SQLite database once, through the storage API (`Database.schedule_matches`,
`Database.record_match`): `--bots` bots, each with 2 versions (the second from half-way
on), at `--players`-player tables of the standard rules outside any tournament, every
match with a small game log (the bot page reads decision times from it). The database is kept in
`--dir` and used again while it has `--matches` matches. The baseline (a `cfarena`
executable of another checkout, with its venv) reads a copy of it migrated down to
the baseline's schema (`--baseline-schema`: 0009, no ladder tallies; 0005, no stored
rating history), the new code the database itself.

Each figure is the median wall and CPU time (user + system; steadier on a busy
machine) of `--repeat` runs, old and new alternating, after one run of each that is
not counted (it warms the caches and writes the compiled modules).
The commands run as processes (interpreter start and imports included). The web's
data is timed inside one process per checkout: the first call of a fresh `WebData`
(cold: what a page costs after a restart or when a match has finished) and a second
call of the same one (the bot page: the baseline keeps its replayed history between
calls and replays only the matches finished since); then the storage reads behind the
leaderboard one by one (`Database.standings`, `ladder_activity`, `results_by_version`,
`skill_standings`: the leaderboard's own CPU is mostly its Bradley-Terry fit, which
grows with the distinct results: with 4 players of 6 bots nearly one per match, with
2 of 4 a few dozen). In-process figures also give SQLite's peak bytes above what it
held before the call (`sqlite3_memory_highwater`, of the SQLite the sqlite3 module is
linked with): its sorts' and temporary b-trees' memory, which grows with what a query
reads.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from alembic import command

from cfarena.server.storage import MatchPlan, StoredMatch, hash_token, open_database
from cfarena.server.storage.connect import alembic_config

CFARENA = str(Path(sys.executable).with_name("cfarena"))
BOTS = 6  # bots, named bot0, bot1, ...
PLAYERS = 4  # seats of every match
BASELINE_REVISION = "0009"  # the schema before the ladder's tallies

WEB_TIMING = """
import ctypes, json, sqlite3, sys, time, _sqlite3
from cfarena.server.storage import open_database
from cfarena.server.web.data import WebData
url, pool, bot, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = {"leaderboard": [], "bot cold": [], "bot again": [], "standings(None, pool)": [],
       "ladder_activity()": [], "results_by_version(pool)": [], "skill_standings(pool)": []}
library = ctypes.CDLL(_sqlite3.__file__)  # the SQLite sqlite3 is linked with (serve_probe)
library.sqlite3_libversion.restype = ctypes.c_char_p
assert library.sqlite3_libversion().decode() == sqlite3.sqlite_version
library.sqlite3_memory_used.restype = ctypes.c_int64
library.sqlite3_memory_highwater.restype = ctypes.c_int64
def timed(what, call, *args):
    used = library.sqlite3_memory_used()
    library.sqlite3_memory_highwater(1)  # the high-water mark from here
    began, cpu = time.perf_counter(), time.process_time()
    call(*args)
    out[what].append((time.perf_counter() - began, time.process_time() - cpu,
                      library.sqlite3_memory_highwater(0) - used))
with open_database(url, create=False) as db:
    for _ in range(repeat):
        timed("leaderboard", WebData(db).leaderboard, pool)
        data = WebData(db)
        timed("bot cold", data.bot, bot, pool)
        timed("bot again", data.bot, bot, pool)
        timed("standings(None, pool)", db.standings, None, pool)
        timed("ladder_activity()", db.ladder_activity)
        timed("results_by_version(pool)", db.results_by_version, pool)
        timed("skill_standings(pool)", db.skill_standings, pool)
print(json.dumps(out))
"""


def _names(bots: int) -> list[str]:
    return [f"bot{i}" for i in range(bots)]


def _pool(players: int) -> str:
    return f"standard/{players}p"


def _log(rng: random.Random, players: int) -> dict[str, object]:
    """A small game log: what the bot page reads of one (its decision times)."""
    return {"actions": [{"seat": turn % players, "turn_id": turn // players + 1,
                         "move": "draw", "ms": round(rng.uniform(0.2, 30.0), 3)}
                        for turn in range(60)]}


def build(path: Path, matches: int, players: int, bots: int) -> None:
    """A database of `matches` finished matches of `players` seats among `bots` bots
    (seeded: the same every time)."""
    rng = random.Random(0)
    with open_database(f"sqlite:///{path}") as db:
        ids = [db.register_bot(name, hash_token(f"token-of-{name}")).bot_id
               for name in _names(bots)]
        for n in range(matches):
            seats = rng.sample(range(bots), players)
            version = "1" if n < matches // 2 else "2"
            plan = MatchPlan(key=f"m{n:05d}", seed=n, rules={"preset": "standard"},
                             players=players, seat_bot_ids=[ids[s] for s in seats],
                             seat_versions=[version] * players)
            [match_id] = db.schedule_matches(None, [plan])
            totals = [rng.randrange(0, 200) for _ in range(players)]
            ranks = [1 + sum(t < total for t in totals) for total in totals]
            db.record_match(StoredMatch(match_id=match_id, round_scores=[totals],
                                        totals=totals, ranks=ranks, log=_log(rng, players)))


def finished(path: Path) -> int:
    if not path.exists():
        return 0
    with open_database(f"sqlite:///{path}", create=False) as db:
        return db.finished_count("global")


def migrate_down(source: Path, target: Path, revision: str) -> None:
    shutil.copyfile(source, target)
    with open_database(f"sqlite:///{target}") as db, db.engine.begin() as conn:
        config = alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# compiled modules are cached (a run that compiles its imports measures the compiler)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `argv`."""
    began, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=ENV)
    took = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return took, _children_cpu() - cpu


def web_times(python: str, url: str, pool: str, repeat: int
              ) -> dict[str, list[tuple[float, ...]]]:
    done = subprocess.run([python, "-c", WEB_TIMING, url, pool, "bot0", str(repeat)],
                          capture_output=True, text=True, check=False, env=ENV)
    if done.returncode != 0:
        sys.exit(f"{python}: web timing failed: {done.stderr.strip()[-2000:]}")
    times: dict[str, list[tuple[float, ...]]] = json.loads(done.stdout)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="the old checkout's cfarena executable")
    ap.add_argument("--matches", type=int, default=800)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cfarena-standings-bench"))
    ap.add_argument("--players", type=int, default=PLAYERS)
    ap.add_argument("--bots", type=int, default=BOTS)
    ap.add_argument("--baseline-schema", default=BASELINE_REVISION,
                    help="the revision the baseline's copy is migrated down to")
    args = ap.parse_args()
    baseline = str(Path(args.baseline).absolute())
    args.dir.mkdir(parents=True, exist_ok=True)
    shape = "" if (args.players, args.bots) == (PLAYERS, BOTS) else \
        f"-{args.players}p{args.bots}b"
    new_db = args.dir / f"standings{shape}.db"
    old_db = args.dir / f"standings{shape}-{args.baseline_schema}.db"
    pool = _pool(args.players)
    if finished(new_db) != args.matches:
        new_db.unlink(missing_ok=True)
        began = time.perf_counter()
        build(new_db, args.matches, args.players, args.bots)
        print(f"built {new_db} ({args.matches} matches) in {time.perf_counter() - began:.1f} s")
    migrate_down(new_db, old_db, args.baseline_schema)

    commands = {
        "cfarena standings": ["standings"],
        "cfarena standings --ladder": ["standings", "--ladder"],
        "cfarena bots show bot0": ["bots", "show", "bot0", "--pool", pool],
    }
    sides = {"old": (baseline, old_db), "new": (CFARENA, new_db)}
    figures: dict[str, dict[str, list[tuple[float, ...]]]] = {what: {"old": [], "new": []}
                                                 for what in commands}
    for n in range(args.repeat + 1):  # the first round warms up (caches, compiled modules)
        for what, cli_args in commands.items():
            for side, (exe, db) in sides.items():
                took = run([exe, *cli_args, "--db", f"sqlite:///{db}"])
                if n:
                    figures[what][side].append(took)
    for side, (exe, db) in sides.items():
        python = str(Path(exe).with_name("python"))
        for what, times in web_times(python, f"sqlite:///{db}", pool, args.repeat).items():
            figures.setdefault(f"web: {what}", {"old": [], "new": []})[side] = times

    print(f"{args.matches} finished {args.players}-player matches, {args.bots} bots x 2 "
          "versions, "
          f"median of {args.repeat}; old: {baseline}, new: {CFARENA}")
    print(f"{'':32} {'wall: old':>10} {'new':>8} {'new/old':>7}   {'CPU: old':>9} {'new':>8} "
          f"{'new/old':>7}   {'SQLite peak: old':>16} {'new':>8}")
    for what, by_side in figures.items():
        line = f"{what:32}"
        for kind in (0, 1):  # wall, then CPU
            old = statistics.median(t[kind] for t in by_side["old"])
            new = statistics.median(t[kind] for t in by_side["new"])
            line += f" {old * 1000:8.0f}ms {new * 1000:6.0f}ms {new / old:7.2f}  "
        if len(by_side["old"][0]) > 2:  # timed in-process: SQLite's peak bytes too
            old, new = (statistics.median(t[2] for t in by_side[side]) / 1024
                        for side in ("old", "new"))
            line += f" {old:13.0f}KiB {new:5.0f}KiB"
        print(line.rstrip())


if __name__ == "__main__":
    main()
