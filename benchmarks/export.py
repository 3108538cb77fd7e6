#!/usr/bin/env python3
"""`cfarena export --tournament` of a tournament of many matches, and the old way (a
`cfarena export MATCH` per match, as a script had to loop), in one run.

    python benchmarks/export.py [--baseline /work/main/.venv/bin/cfarena]
                                [--matches 1000] [--distinct 25] [--sample 20]
                                [--repeat 3] [--dir DIR]

It builds a SQLite database once, through the storage API: one tournament of
`--matches` finished 4-player matches of the standard rules (whole matches, logs of
~70 KB), each match's record one of `--distinct` matches played in-process by the
simulation (greedy bots, seeds 0, 1, ...) under its own match id (the log's
`match_id` is its own, so every log is distinct). The database is kept in `--dir` and
used again while it has `--matches` matches.

Figures (median of `--repeat` runs; wall and CPU time of the process, interpreter
start and imports included, and its peak memory):
- new: `cfarena export --tournament ID -o FILE` (every log, JSON Lines);
- old: `cfarena export MATCH` for `--sample` matches, one process each (the
  `--baseline` executable, else this checkout's), per match and scaled to all
  matches.
It checks that each line of the file is what `export MATCH` prints for that match.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import MatchPlan, hash_token, open_database
from cfarena.server.storage.match_writer import to_stored

CFARENA = str(Path(sys.executable).with_name("cfarena"))
BOTS = ["alice", "bob", "carol", "dave"]
RULES = {"preset": "standard"}


def build(path: Path, matches: int, distinct: int) -> int:
    """A database of one tournament of `matches` finished matches; its id."""
    began = time.perf_counter()
    records = [simulate_record(RULES, len(BOTS), seed, names=BOTS) for seed in range(distinct)]
    played = time.perf_counter() - began
    with open_database(f"sqlite:///{path}") as db:
        ids = [db.register_bot(name, hash_token(f"token-of-{name}")).bot_id for name in BOTS]
        tournament = db.create_tournament("export benchmark", {"matches": matches})
        plans = [MatchPlan(key=f"m{n:05d}", seed=n % distinct, rules=RULES,
                           players=len(BOTS), seat_bot_ids=ids) for n in range(matches)]
        for n, match_id in enumerate(db.schedule_matches(tournament, plans)):
            record = dataclasses.replace(records[n % distinct], match_id=match_id)
            db.record_match(to_stored(record))
    print(f"built {path}: {matches} matches ({distinct} played in {played:.1f} s) in "
          f"{time.perf_counter() - began:.1f} s")
    return tournament


def existing(path: Path, matches: int) -> int | None:
    """The tournament of a database built before with `matches` logs, if there is one."""
    if not path.exists():
        return None
    with open_database(f"sqlite:///{path}", create=False) as db:
        tournaments = db.list_tournaments()
        if len(tournaments) == 1 and db.game_log_count(tournaments[0].id) == matches:
            return tournaments[0].id
    return None


def run(argv: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, float, int]:
    """(wall s, CPU s, peak memory KiB) of one run of `argv`, which must succeed."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.read().decode()}")
    proc.stderr.close()
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default=CFARENA,
                    help="the cfarena executable of the old way (default: this checkout's)")
    ap.add_argument("--matches", type=int, default=1000)
    ap.add_argument("--distinct", type=int, default=25)
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cfarena-export-bench"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / "export.db"
    tournament = existing(path, args.matches)
    if tournament is None:
        path.unlink(missing_ok=True)
        tournament = build(path, args.matches, args.distinct)
    url = f"sqlite:///{path}"
    target = args.dir / "all.jsonl"
    with open_database(url, create=False) as db:
        sample = [match_id for match_id, _ in zip(
            (m for m, _ in db.game_logs(tournament)), range(args.sample), strict=False)]

    new: list[tuple[float, float, int]] = []
    old: list[tuple[float, float, int]] = []
    for n in range(args.repeat + 1):  # the first round warms up (caches, compiled modules)
        took = run([CFARENA, "export", "--tournament", str(tournament), "-o", str(target),
                    "--db", url])
        runs = [run([args.baseline, "export", match_id, "--db", url]) for match_id in sample]
        if n:
            new.append(took)
            old.append((sum(r[0] for r in runs) / len(runs),
                        sum(r[1] for r in runs) / len(runs), max(r[2] for r in runs)))

    lines = target.read_text(encoding="utf-8").splitlines()
    assert len(lines) == args.matches, (len(lines), args.matches)
    by_id = {json.loads(line)["match_id"]: line for line in lines[: args.sample]}
    for match_id in sample:
        printed = subprocess.run([CFARENA, "export", match_id, "--db", url], check=True,
                                 capture_output=True, text=True).stdout
        assert printed == by_id[match_id] + "\n", f"{match_id}: export MATCH differs"

    def median(runs: list[tuple[float, float, int]], i: int) -> float:
        return statistics.median(r[i] for r in runs)

    size = target.stat().st_size
    print(f"{args.matches} matches ({size / 2**20:.1f} MiB of JSON Lines), median of "
          f"{args.repeat}; old: {args.baseline} export MATCH x {args.sample}, scaled")
    print(f"{'':44} {'wall':>9} {'CPU':>9} {'peak RSS':>10}")
    print(f"{'new: export --tournament (all)':44} {median(new, 0):8.2f}s "
          f"{median(new, 1):8.2f}s {median(new, 2) / 1024:8.0f}MiB")
    print(f"{'old: export MATCH (one)':44} {median(old, 0):8.2f}s {median(old, 1):8.2f}s "
          f"{median(old, 2) / 1024:8.0f}MiB")
    print(f"{f'old: export MATCH x {args.matches} (scaled)':44} "
          f"{median(old, 0) * args.matches:8.1f}s {median(old, 1) * args.matches:8.1f}s")
    print(f"new/old (all matches): wall "
          f"{median(new, 0) / (median(old, 0) * args.matches):.4f}")


if __name__ == "__main__":
    main()
