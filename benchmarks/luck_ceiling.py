"""How much noise a luck control variate can take out of a deal group's score, per pair.

    python benchmarks/luck_ceiling.py --groups 600            # big, opening, slipping

For each pair of benchmarks/sprt.py (`sprt.PAIRS`), deal groups are played
in-process under the match law as `benchmarks/sprt.py` plays them, with seeds
of their own ("luck-ceiling/*"). Every draw gives its drawer six features of
the tile that came minus their mean over the boneyard (`draw_luck`): its pips
if it does not fit the layout, 1 if it does not fit, 1 if a double, its pips,
1 if an unplayable double, its pips if it fits. Each has mean zero given
everything before the draw, so any linear combination of a seat's sums is an
unbiased luck term (`cfarena.server.sprt.luck`). Per group, X is the mean over
its matches of NEW's sums net of the other seats' (as `luck.luck_points` nets
them) minus OLD's. Printed per pair, for the point score of a group: its
variance over the variance left after each control variate, and the evidence
per match, t^2 = ((mean - 1/2) / sd)^2 / matches per group, for

- placement and raw points (no adjustment);
- the shipped luck adjustment (`luck.PIP_WEIGHT`, `luck.STUCK_WEIGHT`, frozen);
- the same two features with coefficients refitted on the pair's own groups,
  and all six refitted: least squares, 10-fold cross-validated (each fold's
  coefficients fitted on the other nine), which is what a test that fitted
  its coefficient on its own data would at best achieve.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
from collections.abc import Sequence

import numpy as np
from bot_strength import rules_for
from sprt import BOTS, PAIRS

from cfarena.engine import Move, MoveKind, apply_move, new_match
from cfarena.engine.state import MatchState
from cfarena.sdk.local import play_match
from cfarena.server.sprt.deal_group import seatings
from cfarena.server.sprt.luck import PIP_WEIGHT, STUCK_WEIGHT, open_values, tile_pips

FEATURES = 6
SHIPPED = np.array([PIP_WEIGHT, STUCK_WEIGHT] + [0.0] * (FEATURES - 2))
POINTS_PER_RESULT = 70.0  # a match's head-to-head point score is 1/2 + difference / 70


def draw_luck(state: MatchState) -> np.ndarray:
    """The six features of the tile the seat to move draws, minus their boneyard means."""
    boneyard = state.boneyard()
    fits = open_values(state)
    blank = state.rules.double_blank

    def features(a: int, b: int, pips: float) -> list[float]:
        fit, double = float(a in fits or b in fits), float(a == b)
        return [pips * (1 - fit), 1 - fit, double, pips, double * (1 - fit), pips * fit]

    each = np.array([features(t.a, t.b, float(tile_pips(t, blank))) for t in boneyard])
    result: np.ndarray = each[0] - each.mean(axis=0)
    return result


def group_row(task: tuple[str, int]) -> tuple[float, float, np.ndarray]:
    """(placement score, point score, X) of one deal group of pair `name`."""
    name, index = task
    pair = PAIRS[name]
    rules = rules_for("standard", "single")
    seed = int.from_bytes(hashlib.sha256(f"luck-ceiling/{name}/{index}".encode())
                          .digest()[:8], "big") >> 1
    group = seatings(pair.new, pair.old, pair.field, 4)
    placed = points = 0.0
    x = np.zeros(FEATURES)
    for n, seats in enumerate(group):
        record = play_match([BOTS[s]() for s in seats], rules, seed,
                            f"ceiling-{name}-{index}-{n}", names=seats).record
        state = new_match(record.rules, record.players, record.seed)
        sums = np.zeros((record.players, FEATURES))
        for action in record.actions:
            move = Move.parse(action.move)
            if move.kind is MoveKind.DRAW and state.current_seat is not None:
                sums[state.current_seat] += draw_luck(state)
            apply_move(state, move)
        net = sums - (sums.sum(axis=0) - sums) / (record.players - 1)
        new, old = seats.index(pair.new), seats.index(pair.old)
        placed += 0.5 + (record.ranks[old] - record.ranks[new]) / (2 * (record.players - 1))
        points += 0.5 + (record.totals[old] - record.totals[new]) / POINTS_PER_RESULT
        x += net[new] - net[old]
    k = len(group)
    return placed / k, points / k, x / k


def cross_validated(y: np.ndarray, x: np.ndarray, folds: int = 10) -> np.ndarray:
    """y minus its least-squares prediction from x (mean zero: no intercept taken out),
    each fold's slopes fitted on the other folds."""
    fold = np.arange(y.size) % folds
    left = np.empty_like(y)
    for f in range(folds):
        train = fold != f
        xc = x[train] - x[train].mean(axis=0)
        slopes, *_ = np.linalg.lstsq(xc, y[train] - y[train].mean(), rcond=None)
        left[~train] = y[~train] - x[~train] @ slopes
    return left


def evidence(scores: np.ndarray, per_group: int) -> float:
    return float(((scores.mean() - 0.5) / scores.std(ddof=1)) ** 2 / per_group)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", nargs="+", choices=sorted(PAIRS),
                        default=["big", "opening", "slipping"])
    parser.add_argument("--groups", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    for name in args.pairs:
        with multiprocessing.Pool(args.workers) as pool:
            rows = pool.map(group_row, [(name, i) for i in range(args.groups)], chunksize=8)
        placed = np.array([r[0] for r in rows])
        points = np.array([r[1] for r in rows])
        x = np.array([r[2] for r in rows])
        per_group = len(seatings(PAIRS[name].new, PAIRS[name].old, PAIRS[name].field, 4))
        scores = {
            "placement": placed,
            "raw points": points,
            "shipped luck adjustment": points - x @ SHIPPED / POINTS_PER_RESULT,
            "pips, stuck refitted (cv)": cross_validated(points, x[:, :2]),
            "six features refitted (cv)": cross_validated(points, x),
        }
        pair = PAIRS[name]
        print(f"{pair.label}: {pair.new} vs {pair.old}, {args.groups} deal groups of "
              f"{per_group} matches")
        for label, s in scores.items():
            ratio = points.var() / s.var() if label != "placement" else float("nan")
            print(f"  {label:<28} mean {s.mean():.4f}  variance ratio {ratio:5.3f}  "
                  f"t^2 per match {evidence(s, per_group):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
