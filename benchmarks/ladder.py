#!/usr/bin/env python3
"""The ladder learns the samples' order: a real `cfarena serve` with the four sample
bots dialing in, run until it has finished `--matches` matches, then the ratings.

    python benchmarks/ladder.py [--matches 300] [--rounds half] [--capacity 2]
                                [--budget-ms 50] [--db URL]

Everything goes through the commands a competition uses: `cfarena bots add`,
`cfarena serve --max-matches N` (it stops by itself after N matches have started
and finished), `python -m cfarena.sdk run cfarena.bots.<sample>` for each bot, and
`cfarena standings --json` for the result. With four bots at 4-player tables every
match seats all four, so what it measures is how fast the online rating (openskill,
Weng-Lin Plackett-Luce, which ranks the ladder) and the Bradley-Terry check find the
order random < greedy < smart < montecarlo that `benchmarks/bot_strength.py`
measures in-process (docs/BOTS.md), and how the games and seats were shared.

It prints, per bot: games, the online rating (mu, sigma, the conservative score
mu - 3 sigma and its Elo-like value), the Bradley-Terry Elo with its 95% interval,
and how many matches it played in each seat; then whether each of the three orders
(mu, conservative score, Bradley-Terry) is random < greedy < smart < montecarlo,
and the matches whose order the online rating reached for good (after that match
it never changed again). The exit status is 0 whatever the result (a benchmark
reports, it does not judge).

Montecarlo searches for `--budget-ms` of wall time per decision: on a busy machine
it samples fewer worlds in that time and plays weaker, so run it on a quiet one.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cfarena.server.rating.online import Skill, rate_match
from cfarena.server.storage import MatchStatus, open_database

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.harness
from tests.harness.serve import Arena

CFARENA = str(Path(sys.executable).with_name("cfarena"))
ORDER = ("random", "greedy", "smart", "montecarlo")  # names of tests.harness.serve.SAMPLES
POOL = "standard/4p"


def _cli(*args: str, db: str) -> str:
    done = subprocess.run([CFARENA, *args, "--db", db], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"cfarena {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _ordered(values: dict[str, float]) -> bool:
    return all(values[a] < values[b] for a, b in itertools.pairwise(ORDER))


def _history(db: str) -> tuple[int | None, int]:
    """(the number of matches after which the order of mu was final, the matches
    replayed), re-rating the stored finished matches in the order they ended with the
    arena's own rating code (`cfarena.server.rating.online`)."""
    with open_database(db) as database:
        matches = [m for m in database.list_matches(limit=None)
                   if m.status is MatchStatus.FINISHED]
    matches.sort(key=lambda m: (m.finished_at, m.id))
    ratings: dict[str, Skill] = {}
    settled_at: int | None = None
    for n, match in enumerate(matches, 1):
        ranks = [seat.rank or len(match.seats) for seat in match.seats]
        names = [seat.bot_name for seat in match.seats]
        before = [ratings.get(name, Skill()) for name in names]
        for name, after in zip(names, rate_match(before, ranks), strict=True):
            ratings[name] = after
        if len(ratings) == len(ORDER) and _ordered({k: r.mu for k, r in ratings.items()}):
            settled_at = n if settled_at is None else settled_at
        else:
            settled_at = None
    return settled_at, len(matches)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matches", type=int, default=300)
    ap.add_argument("--rounds", default="half", choices=["full", "half", "single"])
    ap.add_argument("--capacity", type=int, default=2,
                    help="matches each bot plays at once (= matches at once)")
    ap.add_argument("--budget-ms", type=float, default=50.0, help="montecarlo's budget")
    ap.add_argument("--timeout-ms", type=int, default=1000)
    ap.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cfarena-ladder-bench-") as tmp_name:
        tmp = Path(tmp_name)
        db = args.db or f"sqlite:///{tmp / 'ladder.db'}"
        tokens = {name: _cli("bots", "add", name, db=db).strip().splitlines()[-1]
                  for name in ORDER}
        arena = Arena(tmp, db)
        began = time.monotonic()
        try:
            # serve on port 0 (the port it bound read back), the bots dialing in
            port = arena.serve("--players", "4", "--rule", f"rounds={args.rounds}",
                               "--timeout-ms", str(args.timeout_ms), "--concurrency",
                               str(args.capacity), "--max-matches", str(args.matches)).bots
            for name in ORDER:
                arena.dial_in(name, name, f"127.0.0.1:{port}", tokens[name], "--capacity",
                              str(args.capacity), "--retries", "50", "-q",
                              env={"CFARENA_MC_BUDGET_MS": f"{args.budget_ms:g}"})
            serve = arena.procs["serve"]
            if serve.wait() != 0:
                sys.exit(f"serve exited {serve.returncode}: {arena.err()[-2000:]}")
        finally:
            for name in list(arena.procs):
                arena.stop(name, 15)
        elapsed = time.monotonic() - began

        ladder = {r["bot"]: r for r in json.loads(
            _cli("standings", "--pool", POOL, "--ladder", "--json", db=db))}
        settled_at, replayed = _history(db)

    print(f"{args.matches} matches of 4 players, rounds={args.rounds}, montecarlo budget "
          f"{args.budget_ms:g} ms, {args.capacity} at once, {args.timeout_ms} ms move "
          f"timeout: {elapsed:.0f} s wall, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"{'bot':<11} {'games':>5} {'mu':>6} {'sigma':>6} {'score':>6} {'elo':>6} "
          f"{'BT elo':>7} {'BT 95% interval':>16}  seats")
    for name in ORDER:
        rung = ladder[name]
        interval = f"[{rung['ci_low']:.0f}, {rung['ci_high']:.0f}]"
        print(f"{name:<11} {rung['games']:>5} {rung['mu']:>6.2f} {rung['sigma']:>6.2f} "
              f"{rung['score']:>6.2f} {rung['skill_elo']:>6.0f} {rung['bt_elo']:>7.0f} "
              f"{interval:>16}  {rung['seats']}")
    for label, values in (("online mu", {n: ladder[n]["mu"] for n in ORDER}),
                          ("online score (mu - 3 sigma)",
                           {n: ladder[n]["score"] for n in ORDER}),
                          ("Bradley-Terry", {n: ladder[n]["bt_elo"] for n in ORDER})):
        verdict = "yes" if _ordered(values) else "NO"
        print(f"{label}: random < greedy < smart < montecarlo: {verdict}")
    print("the online mu's order was final after "
          f"{settled_at if settled_at is not None else 'never'} of {replayed} matches")


if __name__ == "__main__":
    main()
