"""Matches to a decision: fixed-length test vs SPRT on deal groups, raw vs luck-adjusted.

    python benchmarks/sprt.py                          # both pairs, 150 deal groups each
    python benchmarks/sprt.py --pairs big --groups 60 --tests 500

For each pair of bots (big gap: smart vs greedy; small gap: montecarlo at its
default budget vs a quarter of it) a pool of deal groups is played in-process
under the match law (`benchmarks/bot_strength.play_match`, as the referee
plays them), at tables of `--players` with `--field` in the other seats
(`cfarena.server.sprt.deal_group.seatings`). Every match gives each seat its
placement and its luck-adjusted result (`cfarena.server.sprt.luck`). Then, for
the same hypotheses (logistic Elo bounds on the expected head-to-head score,
which is the same quantity in all three; alpha, beta):

(a) fixed-length test on independent deals: the number of matches a one-sided
    fixed-sample test needs for alpha and beta at these bounds,
    ((z(1-alpha) + z(1-beta)) * sigma / (L(elo1) - L(elo0)))^2, sigma the
    standard deviation of one match's head-to-head score (over all matches of
    the pool: each is a random deal with a random seating, as an independent
    match is), and how often it accepts H1 when run on matches resampled
    from the pool;
(b) the SPRT on deal groups with placement scores;
(c) the SPRT on the same deal groups with luck-adjusted scores;

(b) and (c) are run `--tests` times on groups resampled (with replacement)
from the pool: the mean, spread and 90th percentile of the matches each test
played to its decision, and its verdicts. Resampling a finite pool is a
bootstrap: a test longer than the pool reuses groups.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from bot_strength import rules_for
from scipy.stats import norm

from cfarena.bots import make_bot
from cfarena.bots.montecarlo import DEFAULT_BUDGET_MS, MonteCarloBot
from cfarena.sdk import Bot
from cfarena.server.replay.simulate import play_match
from cfarena.server.sprt.deal_group import SeatedResults, group_score, seatings
from cfarena.server.sprt.llr import logistic_score
from cfarena.server.sprt.match_results import ScoreKind, seated_results
from cfarena.server.sprt.sequential import EloModel, SprtBounds, Verdict
from cfarena.server.sprt.simulation import SimulatedTests, simulate_tests

QUARTER = "montecarlo-quarter"
FIELD_GREEDY = "field-greedy"  # greedy under a name of its own: a field seat beside OLD greedy
BOTS: dict[str, Callable[[], Bot]] = {
    "greedy": lambda: make_bot("greedy"),
    FIELD_GREEDY: lambda: make_bot("greedy"),
    "random": lambda: make_bot("random"),
    "smart": lambda: make_bot("smart"),
    "montecarlo": lambda: MonteCarloBot(budget_ms=DEFAULT_BUDGET_MS),
    QUARTER: lambda: MonteCarloBot(budget_ms=DEFAULT_BUDGET_MS / 4),
}


@dataclass(frozen=True)
class Pair:
    label: str
    new: str
    old: str
    elo1: float  # H1's logistic Elo (H0's is 0)
    field: tuple[str, ...]  # the other seats' bots unless --field is given


PAIRS = {
    "big": Pair("big gap", "smart", "greedy", 40.0, (FIELD_GREEDY,)),
    "small": Pair("small gap", "montecarlo", QUARTER, 20.0, ("smart",)),
}


@dataclass(frozen=True)
class GroupTask:
    pair: str
    index: int
    players: int
    field: tuple[str, ...]
    preset: str
    rounds: str | None


@dataclass(frozen=True)
class PlayedGroup:
    raw: tuple[SeatedResults, ...]
    adjusted: tuple[SeatedResults, ...]


def group_seed(pair: str, index: int) -> int:
    digest = hashlib.sha256(f"bench-sprt/{pair}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def play_group(task: GroupTask) -> PlayedGroup:
    pair = PAIRS[task.pair]
    rules = rules_for(task.preset, task.rounds)
    seed = group_seed(task.pair, task.index)
    raw, adjusted = [], []
    for n, seats in enumerate(seatings(pair.new, pair.old, task.field, task.players)):
        played = play_match([BOTS[name]() for name in seats], rules, seed,
                            f"sprt-{task.pair}-{task.index}-{n}", names=seats)
        raw.append(seated_results(played.record, ScoreKind.RAW))
        adjusted.append(seated_results(played.record, ScoreKind.ADJUSTED))
    return PlayedGroup(tuple(raw), tuple(adjusted))


def line(label: str, sim: SimulatedTests) -> str:
    """One row of the table: matches to a decision (mean, spread, 90th percentile), verdicts."""
    m = sim.matches
    n = len(sim.verdicts)
    return (f"  {label:<38} {m.mean():8.1f} {m.std():8.1f} {np.percentile(m, 90):8.0f}"
            f"   H1 {sim.count(Verdict.H1) / n:6.1%}  H0 {sim.count(Verdict.H0) / n:6.1%}"
            f"  cap {sim.count(Verdict.INCONCLUSIVE) / n:5.1%}")


def resampled(scores: np.ndarray, bounds: SprtBounds, matches_per_group: int,
              args: argparse.Namespace, seed: int) -> SimulatedTests:
    """SPRTs on group scores drawn with replacement from the pool's `scores`."""
    values, counts = np.unique(scores, return_counts=True)
    return simulate_tests(values, counts, bounds, matches_per_group, args.tests,
                          args.max_matches, seed)


def fixed_length(match_scores: np.ndarray, bounds: SprtBounds, tests: int,
                 seed: int) -> tuple[int, float]:
    """(matches a fixed-length test needs, how often it accepted H1 on resampled matches)."""
    s0, s1 = logistic_score(bounds.elo0), logistic_score(bounds.elo1)
    z = norm.ppf(1 - bounds.alpha) + norm.ppf(1 - bounds.beta)
    sigma = float(match_scores.std(ddof=1))
    n = max(1, math.ceil((z * sigma / (s1 - s0)) ** 2))
    rng = np.random.default_rng(seed)
    accepted = 0
    for _ in range(tests):
        mean = match_scores[rng.integers(0, match_scores.size, n)].mean()
        accepted += mean > s0 + norm.ppf(1 - bounds.alpha) * sigma / math.sqrt(n)
    return n, accepted / tests


def report(pair: Pair, field: Sequence[str], groups: Sequence[PlayedGroup],
           args: argparse.Namespace) -> str:
    per_group = len(groups[0].raw)
    bounds = SprtBounds(0.0, pair.elo1, args.alpha, args.beta, EloModel.LOGISTIC)
    raw = np.array([group_score(g.raw, pair.new, pair.old) for g in groups])
    adj = np.array([group_score(g.adjusted, pair.new, pair.old) for g in groups])
    match_scores = np.array([group_score([m], pair.new, pair.old) for g in groups for m in g.raw])
    n_fixed, fixed_power = fixed_length(match_scores, bounds, args.tests, seed=1)
    b = resampled(raw, bounds, per_group, args, seed=2)
    c = resampled(adj, bounds, per_group, args, seed=3)
    var_match = match_scores.var(ddof=1)
    lines = [
        f"{pair.label}: {pair.new} (NEW) vs {pair.old} (OLD), {len(groups)} deal groups of "
        f"{per_group} matches, field {', '.join(field)}; logistic Elo bounds "
        f"[0, {pair.elo1:g}], alpha {args.alpha}, beta {args.beta}",
        f"  mean score: per match {match_scores.mean():.4f}, raw groups {raw.mean():.4f}, "
        f"adjusted groups {adj.mean():.4f}",
        f"  variance per match: independent {var_match:.4f}, duplicate raw "
        f"{raw.var(ddof=1) * per_group:.4f}, duplicate adjusted "
        f"{adj.var(ddof=1) * per_group:.4f}",
        f"  {'':<38} {'matches':>8} {'sd':>8} {'p90':>8}   verdicts",
        f"  {'(a) fixed length, independent deals':<38} {n_fixed:8d} {0:8.1f} {n_fixed:8d}"
        f"   H1 {fixed_power:6.1%}",
        line("(b) SPRT, deal groups, raw", b),
        line("(c) SPRT, deal groups, luck-adjusted", c),
        f"  ratios: (a)/(c) {n_fixed / c.matches.mean():.2f}, "
        f"(b)/(c) {b.matches.mean() / c.matches.mean():.2f}, "
        f"(a)/(b) {n_fixed / b.matches.mean():.2f}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", nargs="+", choices=sorted(PAIRS), default=["big", "small"])
    parser.add_argument("--groups", type=int, default=150, help="deal groups played per pair")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--field", nargs="+", choices=sorted(BOTS),
                        help="the other seats' bots (default: greedy for big, smart for small)")
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--rounds", default="single", help="rounds per match (default single)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--tests", type=int, default=2000, help="simulated tests per kind")
    parser.add_argument("--max-matches", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    rules_for(args.preset, args.rounds).resolve(args.players)
    print(f"preset {args.preset}, rounds {args.rounds}, {args.players} players, "
          f"{args.workers} worker(s)")
    for name in args.pairs:
        field = tuple(args.field) if args.field else PAIRS[name].field
        tasks = [GroupTask(name, i, args.players, field, args.preset, args.rounds)
                 for i in range(args.groups)]
        start = time.perf_counter()
        with multiprocessing.Pool(args.workers) as pool:
            groups = []
            for i, group in enumerate(pool.imap_unordered(play_group, tasks), 1):
                groups.append(group)
                if i % 10 == 0 or i == len(tasks):
                    print(f"{name}: {i}/{len(tasks)} groups, {time.perf_counter() - start:.0f} s",
                          file=sys.stderr, flush=True)
        print(report(PAIRS[name], field, groups, args))
        print(f"  played in {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
