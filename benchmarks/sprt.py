"""Matches to a decision: a fixed-length test vs SPRTs on deal groups, by each way of scoring.

    python benchmarks/sprt.py --groups 800 --pool-dir /tmp/pools  # the three pairs
    python benchmarks/sprt.py --pairs big --groups 60 --tests 500

For each pair of bots (`PAIRS`: big gap, smart vs greedy; small gap by a
deterministic change, smart vs smart-greedy-opening, smart but greedy's move
while it holds more than 6 tiles; small gap by random slips, smart vs smart
slipping, smart but a random move 10% of the time; `--pairs montecarlo`:
montecarlo with 32 sampled worlds per decision vs 8, slow) a pool of deal
groups is played in-process
under the match law (`benchmarks/bot_strength.play_match`, as the referee
plays them), at tables of `--players` with `--field` in the other seats
(`cfarena.server.sprt.deal_group.seatings`). Every match gives each seat its
placement, its points result and its luck-adjusted points result
(`cfarena.server.sprt.match_results.ScoreKind`). Then, for the same
hypotheses and alpha, beta:

(a) fixed-length test on independent deals, placement scores: the number of
    matches a one-sided fixed-sample test needs for alpha and beta at these
    bounds, ((z(1-alpha) + z(1-beta)) * sigma / (L(elo1) - L(elo0)))^2, sigma
    the standard deviation of one match's head-to-head score (over all
    matches of the pool: each is a random deal with a random seating, as an
    independent match is), and how often it accepts H1 when run on matches
    resampled from the pool;
(b) the SPRT on deal groups with placement scores;
(b') the SPRT on the same deal groups with point scores (raw);
(c) the SPRT on the same deal groups with luck-adjusted point scores (what
    `cfarena sprt` scores by default).

The bounds are logistic Elo [0, elo1] of the placement score. Points measure
the same two bots on another scale, so for (b') and (c) H1 is translated to
that scale as the same share of the pool's true gap: a mean point score of
1/2 + (L(elo1) - 1/2) * (mean point score - 1/2) / (mean placement score - 1/2)
(a benchmark's device: a real test states its bounds on its own score); when
the pool shows no placement gap (within 2 standard errors) it is translated in
units of spread instead: 1/2 + (L(elo1) - 1/2) * sd(points) / sd(placement)
over groups. H0
(no difference: a mean of 1/2) is the same on every scale.

(b), (b') and (c) are run `--tests` times on groups resampled (with
replacement) from the pool: the mean, spread and 90th percentile of the
matches each test played to its decision, and its verdicts. Resampling a
finite pool is a bootstrap: a test longer than the pool reuses groups. So are
self-tests on the pool's scores centred on 1/2 and mirrored (the rate of H1
accepted, at most alpha when the test keeps its error rate). The
evidence per match of each way of scoring is printed too: t^2, the squared
(mean score - 1/2) / sd per match (a group's over its matches), to which a
test's length is inversely proportional.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from bot_strength import rules_for
from scipy.stats import norm

from cfarena.bots import make_bot
from cfarena.bots.montecarlo import MonteCarloBot
from cfarena.sdk import Bot, Move, Turn
from cfarena.sdk.local import play_match
from cfarena.server.sprt.deal_group import SeatedResults, group_score, seatings
from cfarena.server.sprt.llr import logistic_score
from cfarena.server.sprt.match_results import ScoreKind, seated_results
from cfarena.server.sprt.sequential import EloModel, SprtBounds, Verdict, logistic_elo
from cfarena.server.sprt.simulation import SimulatedTests, simulate_tests

UNTIMED_MS = 60_000.0  # a thinking budget no decision reaches: max_samples stops it
SAMPLES = 32  # montecarlo's budget in sampled worlds per decision (not the clock)
QUARTER = "montecarlo-quarter"
SLIPPING = "smart-slipping"
SLIP = 0.1  # how often smart-slipping plays a random legal move instead of smart's
GREEDY_OPENING = "smart-greedy-opening"
OPENING_TILES = 6  # smart-greedy-opening plays greedy's move while it holds more tiles


class SlippingBot(Bot):
    """Smart, but a random legal move `SLIP` of the time (decided by a hash of the
    match, seat and turn: reproducible): a small gap to smart, at smart's cost."""

    def __init__(self) -> None:
        self.smart = make_bot("smart")

    def choose(self, turn: Turn) -> Move | int:
        key = f"{turn.match_id}/{turn.observation.seat}/{turn.observation.event_count}"
        rng = random.Random(hashlib.sha256(key.encode()).digest())
        if rng.random() < SLIP:
            return rng.choice(turn.legal_moves)
        return self.smart.choose(turn)


class GreedyOpeningBot(Bot):
    """Smart from the middle game on, greedy's move while it holds more than
    `OPENING_TILES` tiles: smart without its opening heuristics, deterministic. Against
    smart a small gap (about 14 logistic Elo of placement: docs/TESTING_BOTS.md) of the
    kind a bot author's change makes: one part of the play done better, the bot still
    deterministic, so that a deal group's noise is the game's and the deal's only."""

    def __init__(self) -> None:
        self.greedy = make_bot("greedy")
        self.smart = make_bot("smart")

    def choose(self, turn: Turn) -> Move | int:
        opening = len(turn.observation.hand) > OPENING_TILES
        return (self.greedy if opening else self.smart).choose(turn)


FIELD_GREEDY = "field-greedy"  # greedy under a name of its own: a field seat beside OLD greedy
BOTS: dict[str, Callable[[], Bot]] = {
    "greedy": lambda: make_bot("greedy"),
    FIELD_GREEDY: lambda: make_bot("greedy"),
    "random": lambda: make_bot("random"),
    "smart": lambda: make_bot("smart"),
    "montecarlo": lambda: MonteCarloBot(budget_ms=UNTIMED_MS, max_samples=SAMPLES),
    QUARTER: lambda: MonteCarloBot(budget_ms=UNTIMED_MS, max_samples=SAMPLES // 4),
    SLIPPING: SlippingBot,
    GREEDY_OPENING: GreedyOpeningBot,
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
    "opening": Pair("small gap, a deterministic change", "smart", GREEDY_OPENING, 20.0,
                    (FIELD_GREEDY,)),
    "slipping": Pair("small gap, random slips", "smart", SLIPPING, 20.0, (FIELD_GREEDY,)),
    "montecarlo": Pair("small gap", "montecarlo", QUARTER, 20.0, ("smart",)),
}


@dataclass(frozen=True)
class GroupTask:
    pair: str
    index: int
    players: int
    field: tuple[str, ...]
    preset: str
    rounds: str | None


PlayedGroup = dict[ScoreKind, tuple[SeatedResults, ...]]  # a group's matches, scored each way


def group_seed(pair: str, index: int) -> int:
    digest = hashlib.sha256(f"bench-sprt/{pair}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def play_group(task: GroupTask) -> PlayedGroup:
    pair = PAIRS[task.pair]
    rules = rules_for(task.preset, task.rounds)
    seed = group_seed(task.pair, task.index)
    records = [play_match([BOTS[name]() for name in seats], rules, seed,
                          f"sprt-{task.pair}-{task.index}-{n}", names=seats).record
               for n, seats in enumerate(seatings(pair.new, pair.old, task.field,
                                                  task.players))]
    return {kind: tuple(seated_results(r, kind) for r in records) for kind in ScoreKind}


def pool_path(args: argparse.Namespace, name: str, field: Sequence[str]) -> str:
    """Where `--pool-dir` keeps a pair's played groups for these settings."""
    key = "-".join([name, str(args.players), args.preset, str(args.rounds), *field])
    return os.path.join(args.pool_dir, f"{key}.json")


def played_groups(name: str, field: tuple[str, ...],
                  args: argparse.Namespace) -> list[PlayedGroup]:
    """`--groups` deal groups of a pair: read from `--pool-dir` when it holds as many
    for these settings, else played in-process (and kept there)."""
    path = pool_path(args, name, field) if args.pool_dir else None
    if path and os.path.exists(path):
        with open(path) as f:
            kept = json.load(f)
        if len(kept) >= args.groups:
            print(f"{name}: {args.groups} groups read from {path}", file=sys.stderr)
            return [{ScoreKind(k): tuple(SeatedResults(tuple(seats), tuple(results))
                                         for seats, results in matches)
                     for k, matches in g.items()} for g in kept[:args.groups]]
    tasks = [GroupTask(name, i, args.players, field, args.preset, args.rounds)
             for i in range(args.groups)]
    start = time.perf_counter()
    with multiprocessing.Pool(args.workers) as pool:
        groups = list(pool.imap(play_group, tasks))  # in index order: a pool's prefix is stable
    print(f"{name}: {len(tasks)} groups played in {time.perf_counter() - start:.0f} s",
          file=sys.stderr, flush=True)
    if path:
        os.makedirs(args.pool_dir, exist_ok=True)
        with open(path, "w") as f:
            json.dump([{k.value: [[m.seats, m.results] for m in matches]
                        for k, matches in g.items()} for g in groups], f)
    return groups


def line(label: str, sim: SimulatedTests) -> str:
    """One row of the table: matches to a decision (mean, spread, 90th percentile), verdicts."""
    m = sim.matches
    n = len(sim.verdicts)
    return (f"  {label:<40} {m.mean():8.1f} {m.std():8.1f} {np.percentile(m, 90):8.0f}"
            f"   H1 {sim.count(Verdict.H1) / n:6.1%}  H0 {sim.count(Verdict.H0) / n:6.1%}"
            f"  cap {sim.count(Verdict.INCONCLUSIVE) / n:5.1%}")


def resampled(scores: np.ndarray, bounds: SprtBounds, matches_per_group: int,
              args: argparse.Namespace, seed: int) -> SimulatedTests:
    """SPRTs on group scores drawn with replacement from the pool's `scores`."""
    values, counts = np.unique(scores, return_counts=True)
    return simulate_tests(values, counts, bounds, matches_per_group, args.tests,
                          args.max_matches, seed)


def mirrored(scores: np.ndarray) -> np.ndarray:
    """The scores centred on 1/2 and mirrored about it: a self-test's distribution
    (NEW as good as OLD) with the pool's spread and shape."""
    centred = scores - scores.mean() + 0.5
    return np.concatenate([centred, 1.0 - centred])


def self_test_rate(label: str, sim: SimulatedTests) -> str:
    rate, low, high = sim.rate(Verdict.H1)
    return f"{label} {rate:.1%} [{low:.1%}, {high:.1%}]"


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


def evidence(scores: np.ndarray, per_match: int) -> float:
    """t^2 per match: ((mean - 1/2) / sd)^2 of the scores, divided by the matches in one."""
    return float(((scores.mean() - 0.5) / scores.std(ddof=1)) ** 2 / per_match)


def report(pair: Pair, field: Sequence[str], groups: Sequence[PlayedGroup],
           args: argparse.Namespace) -> str:
    per_group = len(groups[0][ScoreKind.PLACEMENT])
    bounds = SprtBounds(0.0, pair.elo1, args.alpha, args.beta, EloModel.LOGISTIC)
    scores = {kind: np.array([group_score(g[kind], pair.new, pair.old) for g in groups])
              for kind in ScoreKind}
    placed, raw, adj = (scores[k] for k in (ScoreKind.PLACEMENT, ScoreKind.RAW,
                                             ScoreKind.ADJUSTED))
    match_scores = np.array([group_score([m], pair.new, pair.old)
                             for g in groups for m in g[ScoreKind.PLACEMENT]])
    gap = placed.mean() - 0.5
    if gap > 2 * placed.std(ddof=1) / math.sqrt(placed.size):  # H1 as a share of the gap
        share, translated = (raw.mean() - 0.5) / gap, "share of the gap"
    else:  # no gap to measure: H1 in units of each score's spread
        share, translated = raw.std(ddof=1) / placed.std(ddof=1), "units of spread"
    points_elo1 = logistic_elo(0.5 + share * (logistic_score(pair.elo1) - 0.5))
    points_bounds = SprtBounds(0.0, points_elo1, args.alpha, args.beta, EloModel.LOGISTIC)
    n_fixed, fixed_power = fixed_length(match_scores, bounds, args.tests, seed=1)
    b = resampled(placed, bounds, per_group, args, seed=2)
    b2 = resampled(raw, points_bounds, per_group, args, seed=3)
    c = resampled(adj, points_bounds, per_group, args, seed=4)
    selfs = [self_test_rate(label, resampled(mirrored(x), bnd, per_group, args, seed=5 + i))
             for i, (label, x, bnd) in enumerate((("(b)", placed, bounds),
                                                  ("(b')", raw, points_bounds),
                                                  ("(c)", adj, points_bounds)))]
    lines = [
        f"{pair.label}: {pair.new} (NEW) vs {pair.old} (OLD), {len(groups)} deal groups of "
        f"{per_group} matches, field {', '.join(field)}; logistic Elo bounds "
        f"[0, {pair.elo1:g}] on placement, [0, {points_elo1:.1f}] on points ({translated}), "
        f"alpha {args.alpha}, beta {args.beta}",
        f"  mean score: placement {placed.mean():.4f}, points {raw.mean():.4f}, "
        f"adjusted points {adj.mean():.4f}",
        f"  variance per match: placement independent {match_scores.var(ddof=1):.4f}, "
        f"groups {placed.var(ddof=1) * per_group:.4f}; points groups "
        f"{raw.var(ddof=1) * per_group:.4f}, adjusted {adj.var(ddof=1) * per_group:.4f} "
        f"(luck removes {1 - adj.var(ddof=1) / raw.var(ddof=1):.1%})",
        f"  evidence t^2 per match: placement independent "
        f"{evidence(match_scores, 1):.4f}, groups {evidence(placed, per_group):.4f}; "
        f"points groups {evidence(raw, per_group):.4f}, adjusted "
        f"{evidence(adj, per_group):.4f}",
        f"  {'':<40} {'matches':>8} {'sd':>8} {'p90':>8}   verdicts",
        f"  {'(a) fixed length, independent, placement':<40} {n_fixed:8d} {0:8.1f} "
        f"{n_fixed:8d}   H1 {fixed_power:6.1%}",
        line("(b) SPRT, deal groups, placement", b),
        line("(b') SPRT, deal groups, points", b2),
        line("(c) SPRT, deal groups, adjusted points", c),
        f"  ratios: (a)/(c) {n_fixed / c.matches.mean():.2f}, "
        f"(b)/(c) {b.matches.mean() / c.matches.mean():.2f}, "
        f"(b')/(c) {b2.matches.mean() / c.matches.mean():.2f}, "
        f"(a)/(b) {n_fixed / b.matches.mean():.2f}",
        f"  self-tests (the pool's scores centred on 1/2 and mirrored), H1 accepted "
        f"[95% interval]: {', '.join(selfs)}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", nargs="+", choices=sorted(PAIRS),
                        default=["big", "opening", "slipping"])
    parser.add_argument("--groups", type=int, default=150, help="deal groups played per pair")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--field", nargs="+", choices=sorted(BOTS),
                        help="the other seats' bots (default: each pair's, greedy)")
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--rounds", default="single", help="rounds per match (default single)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--tests", type=int, default=2000, help="simulated tests per kind")
    parser.add_argument("--max-matches", type=int, default=4000)
    parser.add_argument("--pool-dir", help="keep played groups here and reuse them "
                        "(the same pool measured by another version of the test)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    rules_for(args.preset, args.rounds).resolve(args.players)
    print(f"preset {args.preset}, rounds {args.rounds}, {args.players} players, "
          f"{args.workers} worker(s)")
    for name in args.pairs:
        field = tuple(args.field) if args.field else PAIRS[name].field
        print(report(PAIRS[name], field, played_groups(name, field, args), args), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
