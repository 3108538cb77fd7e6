"""Fit the luck value estimate's two weights (cfarena.server.sprt.luck) on simulated matches.

    python benchmarks/fit_luck.py --matches 4000                 # single rounds (the frozen fit)
    python benchmarks/fit_luck.py --matches 400 --rounds full    # check longer matches

Matches are played in-process by the simulation's policies (greedy and random
seats mixed, `cfarena.server.replay.simulate`), with seeds of their own (never
a test's or a benchmark's). The points each seat is ahead of the other seats'
mean are regressed (least squares, no intercept: both sides have mean zero) on
its net luck sums (its sum minus the mean of the other seats', as
`luck.luck_points` takes them). The slopes printed are what `PIP_WEIGHT` and
`STUCK_WEIGHT` hold; the fraction of the variance they explain is printed too.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from collections.abc import Sequence

import numpy as np

from cfarena.engine import new_match
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.sprt.luck import luck_sums


def fit_seed(i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"fit-luck/{i}".encode()).digest()[:8], "big") >> 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--matches", type=int, default=4000)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--rounds", default="single")
    args = parser.parse_args(argv)
    options = {"preset": args.preset, "rounds": args.rounds}
    rng = random.Random(0)
    rows: list[tuple[float, float]] = []
    target: list[float] = []
    rounds = 1
    for i in range(args.matches):
        policies = [rng.choice(("greedy", "greedy", "random")) for _ in range(args.players)]
        seed = fit_seed(i)
        record = simulate_record(options, args.players, seed, policies)
        state = new_match(record.rules, record.players, record.seed)
        rounds = state.rules.rounds
        sums = luck_sums(state, (a.move for a in record.actions))
        for s, total in enumerate(record.totals):
            others = [j for j in range(args.players) if j != s]
            rows.append((sums[s][0] - sum(sums[j][0] for j in others) / len(others),
                         sums[s][1] - sum(sums[j][1] for j in others) / len(others)))
            target.append(sum(record.totals[j] for j in others) / len(others) - total)
    x = np.array(rows)
    y = np.array(target)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    explained = 1.0 - float(np.var(y - x @ coef)) / float(np.var(y))
    print(f"{args.matches} matches, {args.players} players, {args.preset}, rounds "
          f"{args.rounds} ({rounds})")
    print(f"PIP_WEIGHT = {coef[0]:.6f}")
    print(f"STUCK_WEIGHT = {coef[1]:.6f}")
    print(f"variance of the points ahead explained: {explained:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
