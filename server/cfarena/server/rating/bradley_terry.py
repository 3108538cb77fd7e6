"""The order-independent rating: a Bradley-Terry fit over a set of matches.

Pure functions, no I/O. `fit_ratings` is a Bradley-Terry maximum-likelihood
fit over all pairwise games (`rating.pairwise`) with a weak prior, on the Elo
scale (mean 1500), with a 95% confidence interval from a bootstrap over matches.
"""

from __future__ import annotations

import itertools
import math
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


# draws in a bootstrap (resamples x matches) from which numpy's multinomial pays for its
# import (~0.1 s): a tournament's few matches are drawn one by one, in pure Python, and
# a process that fits no ladder does not load numpy
NUMPY_FROM_DRAWS = 100_000
_NUMPY_IMPORT = threading.Lock()  # numpy's first import is not one to race


class _Resampler:
    """The bootstrap's resamples over distinct results: how often each is drawn when
    the matches they stand for (`times[m]` each) are drawn with replacement, and the
    pairwise games and bots of each draw.

    Up to `NUMPY_FROM_DRAWS` draws in all, match by match (`random.choices` with the
    counts as weights); beyond, one multinomial draw over the distinct results per
    resample and the sums in numpy: a ladder's matches grow for as long as it runs,
    its distinct results stop growing once every seating and rank order was seen, so
    the cost stops growing too. Both draw from one distribution, each seeded; which
    one a fit uses depends only on its results and `bootstrap` (and numpy's draws on its
    version: numpy does not promise the same stream across versions, NEP 19)."""

    def __init__(self, n: int, contribs: Sequence[_Contrib], seats: Sequence[Sequence[int]],
                 times: Sequence[int], seed: int, bootstrap: int) -> None:
        self.n, self.contribs, self.seats = n, contribs, seats
        self.count = int(sum(times))
        self.np: Any = None
        if self.count * bootstrap < NUMPY_FROM_DRAWS:
            self.random = random.Random(seed)
            self.cumulative = list(itertools.accumulate(times))
            return
        with _NUMPY_IMPORT:  # pages are read in a thread pool (web/sprt_tests.py)
            import numpy as np

        self.np = np
        self.rng = np.random.default_rng(seed)
        self.p = np.asarray(times, dtype=float) / self.count
        self.game_of = np.asarray([m for m, c in enumerate(contribs) for _ in c], dtype=np.intp)
        self.pair = np.asarray([pid for c in contribs for pid, _ in c], dtype=np.intp)
        self.score = np.asarray([score for c in contribs for _, score in c], dtype=float)
        self.seat_of = np.asarray([m for m, bots in enumerate(seats) for _ in bots],
                                  dtype=np.intp)
        self.bot = np.asarray([i for bots in seats for i in bots], dtype=np.intp)

    def draw(self) -> tuple[list[tuple[int, int, float, float]], list[int]]:
        """One resample: its pairwise games as `_aggregate` gives them, and the bots in
        it (indices, sorted)."""
        if self.np is None:
            weights = [0] * len(self.cumulative)
            for m in self.random.choices(range(len(weights)), cum_weights=self.cumulative,
                                         k=self.count):
                weights[m] += 1
            present = sorted({i for m, w in enumerate(weights) if w for i in self.seats[m]})
            return _aggregate(self.n, self.contribs, weights), present
        np, n = self.np, self.n
        drawn = self.rng.multinomial(self.count, self.p)
        w = drawn[self.game_of].astype(float)
        games = np.bincount(self.pair, weights=w, minlength=n * n)
        scores = np.bincount(self.pair, weights=w * self.score, minlength=n * n)
        played = np.flatnonzero(games).tolist()
        present = np.flatnonzero(np.bincount(self.bot, weights=drawn[self.seat_of],
                                             minlength=n)).tolist()
        return ([(pid // n, pid % n, float(games[pid]), float(scores[pid]))
                 for pid in played], present)


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
    refits over matches resampled with replacement (seeded, so reproducible; match by
    match, or for many matches numpy's multinomial over the distinct results:
    `_Resampler`);
    each refit is centred on the bots it contains. With `bootstrap=0` the
    interval is the point estimate. Bots that never met another bot get 1500
    plus whatever the anchoring gives them.

    With `counts`, `results[m]` stands for `counts[m]` matches with the same seats
    and ranks (a ladder's history, kept in memory as its distinct results): the same
    fit and the same bootstrap, with memory that does not grow with the matches.
    """
    # identical results, first seen first, are one result counted that many times:
    # matches listed one by one and the same ones as distinct results with counts
    # are one fit and one bootstrap
    distinct: dict[tuple[tuple[B, int], ...], int] = {}
    for match, k in zip(results, [1] * len(results) if counts is None else counts,
                        strict=True):
        key = tuple((bot, rank) for bot, rank in match)
        distinct[key] = distinct.get(key, 0) + k
    index: dict[B, int] = {}
    for match in distinct:
        for bot, _ in match:
            index.setdefault(bot, len(index))
    n = len(index)
    if n == 0:
        return {}
    times = list(distinct.values())
    matches = [0] * n
    contribs: list[_Contrib] = []
    seats: list[list[int]] = []
    for match, k in zip(distinct, times, strict=True):
        seats.append(sorted({index[bot] for bot, _ in match}))
        for i in seats[-1]:
            matches[i] += k
        contrib: _Contrib = []
        for a, b, score in pairwise_games(match):
            i, j = index[a], index[b]
            contrib.append((i * n + j, score) if i < j else (j * n + i, 1.0 - score))
        contribs.append(contrib)

    theta = _bt_fit(n, _aggregate(n, contribs, times), prior)
    point = _to_elo(theta, range(n))

    samples: list[list[float]] = [[] for _ in range(n)]
    if bootstrap and sum(times):
        resampler = _Resampler(n, contribs, seats, times, seed, bootstrap)
        for _ in range(bootstrap):
            games, present = resampler.draw()
            fitted = _bt_fit(n, games, prior, start=theta)
            for i, value in _to_elo(fitted, present).items():
                samples[i].append(value)

    out: dict[B, RatingEstimate] = {}
    for bot, i in index.items():
        values = sorted(samples[i])
        low = _percentile(values, 0.025) if values else point[i]
        high = _percentile(values, 0.975) if values else point[i]
        out[bot] = RatingEstimate(elo=point[i], low=low, high=high, matches=matches[i])
    return out
