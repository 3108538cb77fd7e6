#!/usr/bin/env python3
"""The Bradley-Terry check's CPU as a ladder's history grows: `fit_ratings` with its
200-resample bootstrap over a ladder's distinct results with their counts (as
`standings.ladder.ladder_rows` calls it for the leaderboard, at most every 2 s while
matches end), for histories of N matches among 6 bots at 4 seats.

The distinct results stop growing long before the matches do (at most 6P4 seatings x
4! rank orders); a bootstrap that draws every match grows with N, one that draws
over the distinct results does not. With `--baseline PYTHON` (another checkout's
interpreter, e.g. /work/base/.venv/bin/python) the same figures of that checkout are
measured too, the two runs alternating.

    python benchmarks/bt_bootstrap.py [--matches 4000 40000 400000] [--repeat 3]
                                      [--baseline PYTHON]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time


def distinct_results(matches: int, bots: int = 6, players: int = 4, seed: int = 1
                     ) -> list[tuple[tuple[tuple[tuple[str, str], int], ...], int]]:
    """A ladder's history of `matches` random results, as distinct results and counts."""
    rng = random.Random(seed)
    names = [(f"bot{i}", "1") for i in range(bots)]
    counts: dict[tuple[tuple[tuple[str, str], int], ...], int] = {}
    for _ in range(matches):
        ranks = list(range(1, players + 1))
        rng.shuffle(ranks)
        key = tuple(zip(rng.sample(names, players), ranks, strict=True))
        counts[key] = counts.get(key, 0) + 1
    return list(counts.items())


def measure(matches: int) -> tuple[int, float]:
    """Distinct results, and the CPU seconds of one fit with its bootstrap."""
    from cfarena.server.rating.bradley_terry import fit_ratings

    results = distinct_results(matches)
    started = time.process_time()
    fit_ratings([list(r) for r, _ in results], bootstrap=200, seed=0,
                counts=[k for _, k in results])
    return len(results), time.process_time() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matches", type=int, nargs="+", default=[4000, 40000, 400000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="another checkout's python, measured alternately")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's single measure
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one)))
        return
    runs = {"new": sys.executable, **({"old": args.baseline} if args.baseline else {})}
    best: dict[tuple[str, int], float] = {}
    distinct: dict[int, int] = {}
    for _ in range(args.repeat):
        for n in args.matches:
            for label, python in runs.items():
                out = subprocess.run([python, __file__, "--one", str(n)], check=True,
                                     capture_output=True, text=True).stdout
                k, seconds = json.loads(out)
                distinct[n] = k
                best[label, n] = min(seconds, best.get((label, n), seconds))
    print(f"best of {args.repeat}: CPU seconds of one fit with 200 resamples")
    print(f"{'matches':>8} {'distinct':>8}" + "".join(f" {label:>8}" for label in runs))
    for n in args.matches:
        print(f"{n:>8} {distinct[n]:>8}" + "".join(f" {best[label, n]:>8.3f}" for label in runs))


if __name__ == "__main__":
    main()
