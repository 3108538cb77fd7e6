"""The order-independent rating: a Bradley-Terry fit over a set of matches.

Pure functions, no I/O. `fit_ratings` is a Bradley-Terry maximum-likelihood
fit over all pairwise games (`rating.pairwise`) with a weak prior, on the Elo
scale (mean 1500), with a 95% confidence interval from a bootstrap over matches.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from cfarena.server.rating.pairwise import INITIAL_ELO, B, MatchRanks, pairwise_games

ELO_PER_NAT = 400.0 / math.log(10.0)


@dataclass(frozen=True, slots=True)
class RatingEstimate:
    """A fitted rating on the Elo scale and its 95% bootstrap interval."""

    elo: float
    low: float
    high: float
    matches: int = 0


# One match as pairwise games between bot indices: (pair id, score of the lower index).
_Contrib = list[tuple[int, float]]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve a symmetric positive definite system by Gaussian elimination (no pivoting)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = m[col][col]
        for r in range(col + 1, n):
            f = m[r][col] / pivot
            if f:
                row, prow = m[r], m[col]
                for c in range(col, n + 1):
                    row[c] -= f * prow[c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        s = m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))
        x[r] = s / m[r][r]
    return x


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _bt_fit(
    n: int,
    pairs: list[tuple[int, int, float, float]],
    prior: float,
    start: list[float] | None = None,
) -> list[float]:
    """Bradley-Terry log-strengths by damped Newton.

    `pairs` holds (i, j, games, score of i). The prior is `prior` virtual games
    of every bot against a fixed anchor of strength 0 with half the points, which
    makes the likelihood strictly concave (unique, finite optimum).
    """
    theta = list(start) if start is not None else [0.0] * n

    def loglik(t: list[float]) -> float:
        total = sum(prior * 0.5 * (_log_sigmoid(x) + _log_sigmoid(-x)) for x in t)
        for i, j, games, score in pairs:
            d = t[i] - t[j]
            total += score * _log_sigmoid(d) + (games - score) * _log_sigmoid(-d)
        return total

    current = loglik(theta)
    for _ in range(100):
        grad = [0.0] * n
        hess = [[0.0] * n for _ in range(n)]
        for i, x in enumerate(theta):
            p = _sigmoid(x)
            grad[i] = prior * (0.5 - p)
            hess[i][i] = prior * p * (1.0 - p)
        for i, j, games, score in pairs:
            p = _sigmoid(theta[i] - theta[j])
            g = score - games * p
            grad[i] += g
            grad[j] -= g
            w = games * p * (1.0 - p)
            hess[i][i] += w
            hess[j][j] += w
            hess[i][j] -= w
            hess[j][i] -= w
        step = _solve(hess, grad)
        scale = 1.0
        while True:
            trial = [t + scale * s for t, s in zip(theta, step, strict=True)]
            value = loglik(trial)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale /= 2.0
        theta, current = trial, value
        if max((abs(s) * scale for s in step), default=0.0) < 1e-8:
            break
    return theta


def _aggregate(
    n: int, contribs: Sequence[_Contrib], weights: Sequence[int] | None
) -> list[tuple[int, int, float, float]]:
    games = [0.0] * (n * n)
    scores = [0.0] * (n * n)
    for m, contrib in enumerate(contribs):
        w = 1 if weights is None else weights[m]
        if not w:
            continue
        for pid, score in contrib:
            games[pid] += w
            scores[pid] += w * score
    return [
        (pid // n, pid % n, games[pid], scores[pid]) for pid in range(n * n) if games[pid]
    ]


def _to_elo(theta: Sequence[float], present: Sequence[int]) -> dict[int, float]:
    if not present:
        return {}
    mean = sum(theta[i] for i in present) / len(present)
    return {i: INITIAL_ELO + ELO_PER_NAT * (theta[i] - mean) for i in present}


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


RESAMPLE_CHUNK = 4096  # matches drawn at a time in a bootstrap resample


def _resample(rng: random.Random, cumulative: Sequence[int], count: int) -> list[int]:
    """How often each result is drawn when `count` matches are drawn with replacement,
    result m standing for `cumulative[m] - cumulative[m - 1]` of them (the same draws
    as `rng.choices(range(count), k=count)` over the matches one by one), drawn
    `RESAMPLE_CHUNK` at a time."""
    weights = [0] * len(cumulative)
    population = range(len(cumulative))
    for start in range(0, count, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, count - start)
        for m in rng.choices(population, cum_weights=cumulative, k=k):
            weights[m] += 1
    return weights


def fit_ratings(
    results: Sequence[MatchRanks[B]],
    bootstrap: int = 200,
    seed: int = 0,
    prior: float = 1.0,
    counts: Sequence[int] | None = None,
) -> dict[B, RatingEstimate]:
    """Bradley-Terry ratings of every bot in `results`, Elo scale anchored at mean 1500.

    `results` holds one `(bot, rank)` sequence per match. Ties count half a win
    each way. The interval is the 2.5-97.5 percentile range of `bootstrap`
    refits over matches resampled with replacement (seeded, so reproducible);
    each refit is centred on the bots it contains. With `bootstrap=0` the
    interval is the point estimate. Bots that never met another bot get 1500
    plus whatever the anchoring gives them.

    With `counts`, `results[m]` stands for `counts[m]` matches with the same seats
    and ranks (a ladder's history, kept in memory as its distinct results): the same
    fit and the same bootstrap, with memory that does not grow with the matches.
    """
    index: dict[B, int] = {}
    for match in results:
        for bot, _ in match:
            index.setdefault(bot, len(index))
    n = len(index)
    if n == 0:
        return {}
    times = [1] * len(results) if counts is None else list(counts)
    matches = [0] * n
    contribs: list[_Contrib] = []
    for match, k in zip(results, times, strict=True):
        for i in {index[bot] for bot, _ in match}:
            matches[i] += k
        contrib: _Contrib = []
        for a, b, score in pairwise_games(match):
            i, j = index[a], index[b]
            contrib.append((i * n + j, score) if i < j else (j * n + i, 1.0 - score))
        contribs.append(contrib)

    theta = _bt_fit(n, _aggregate(n, contribs, None if counts is None else times), prior)
    point = _to_elo(theta, range(n))

    samples: list[list[float]] = [[] for _ in range(n)]
    rng = random.Random(seed)
    cumulative = list(itertools.accumulate(times))
    count = cumulative[-1] if cumulative else 0
    for _ in range(bootstrap if count else 0):
        weights = _resample(rng, cumulative, count)
        present = sorted(
            {index[bot] for m, w in enumerate(weights) if w for bot, _ in results[m]}
        )
        fitted = _bt_fit(n, _aggregate(n, contribs, weights), prior, start=theta)
        for i, value in _to_elo(fitted, present).items():
            samples[i].append(value)

    out: dict[B, RatingEstimate] = {}
    for bot, i in index.items():
        values = sorted(samples[i])
        low = _percentile(values, 0.025) if values else point[i]
        high = _percentile(values, 0.975) if values else point[i]
        out[bot] = RatingEstimate(elo=point[i], low=low, high=high, matches=matches[i])
    return out
