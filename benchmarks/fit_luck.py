"""Fit the luck value estimate's two weights (cfarena.server.sprt.luck) on simulated deal groups.

    python benchmarks/fit_luck.py --groups 1500        # the frozen fit (about a minute)

Deal groups are played in-process under the match law
(`cfarena.sdk.local.play_match`) as `cfarena sprt` plays them
(`cfarena.server.sprt.deal_group.seatings`): the bundled smart bot as NEW,
greedy as OLD and greedy in the other seats, standard rules, 4 players, single
rounds, with seeds of their own ("fit-luck/*", never a test's or a
benchmark's). The weights are a control variate for the group's score: the
least-squares slopes of a group's mean point difference (OLD's points minus
NEW's) on the mean over its matches of NEW's net luck sums minus OLD's (a
seat's sums minus the mean of the other seats', as `luck.luck_points` takes
them), with an intercept (the bots' gap). Fitted on groups, not on single
matches, because the group's score is what the test sees: a fit on matches
(greedy and random seats) gave weights about twice too large for groups, which
added noise instead of removing it. The slopes printed are what `PIP_WEIGHT`
and `STUCK_WEIGHT` hold; the share of the group scores' variance they remove is
printed too.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Sequence

import numpy as np

from cfarena.bots import make_bot
from cfarena.engine import Rules, new_match
from cfarena.sdk.local import play_match
from cfarena.server.sprt.deal_group import seatings
from cfarena.server.sprt.luck import luck_sums

NEW, OLD, FIELD = "smart", "greedy", "field"


def fit_seed(i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"fit-luck/{i}".encode()).digest()[:8], "big") >> 1


def net(sums: Sequence[tuple[float, float]], seat: int) -> np.ndarray:
    """A seat's luck sums minus the mean of the other seats'."""
    others = [sums[j] for j in range(len(sums)) if j != seat]
    return np.array(sums[seat]) - np.mean(others, axis=0)


def play_group(rules: Rules, players: int, seed: int, index: int) -> tuple[float, np.ndarray]:
    """(mean point difference OLD - NEW, mean of NEW's net sums - OLD's) of one group."""
    difference, luck = 0.0, np.zeros(2)
    group = seatings(NEW, OLD, (FIELD,), players)
    for n, seats in enumerate(group):
        bots = [make_bot("greedy" if name == FIELD else name) for name in seats]
        record = play_match(bots, rules, seed, f"fit-{index}-{n}", names=seats).record
        sums = luck_sums(new_match(record.rules, record.players, record.seed),
                         (a.move for a in record.actions))
        new, old = seats.index(NEW), seats.index(OLD)
        difference += record.totals[old] - record.totals[new]
        luck += net(sums, new) - net(sums, old)
    return difference / len(group), luck / len(group)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--groups", type=int, default=1500)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--rounds", default="single")
    args = parser.parse_args(argv)
    rules = Rules.preset(args.preset).with_options(rounds=args.rounds)
    played = [play_group(rules, args.players, fit_seed(i), i) for i in range(args.groups)]
    y = np.array([d for d, _ in played])
    x = np.array([luck for _, luck in played])
    xc, yc = x - x.mean(axis=0), y - y.mean()
    coef, *_ = np.linalg.lstsq(xc, yc, rcond=None)
    removed = 1.0 - float(np.var(yc - xc @ coef)) / float(np.var(yc))
    print(f"{args.groups} deal groups of {NEW} vs {OLD}, {args.players} players, "
          f"{args.preset}, rounds {args.rounds}")
    print(f"PIP_WEIGHT = {coef[0]:.4f}")
    print(f"STUCK_WEIGHT = {coef[1]:.4f}")
    print(f"group score variance removed: {removed:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
