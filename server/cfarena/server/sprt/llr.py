"""The generalized log-likelihood ratio over the empirical distribution of group scores.

The scores of a test's deal groups are taken as draws from an unknown discrete
distribution over the values seen (a multinomial, no parametric model). For a
hypothesis "the mean score is s" (logistic Elo) or "the t-value (mean - 1/2) /
sigma is t" (normalized Elo), the distribution closest to the empirical one
under that constraint is its maximum-likelihood estimate; the log-likelihood
ratio of the two hypotheses is the number of groups times the mean log-ratio of
the two estimates. This is fishtest's `LLR_logistic` / `LLR_normalized`
(Michel Van den Bergh's "generalized SPRT"), for any score values rather than
its three (W/D/L) or five (game pair) categories.

The constrained estimate of a distribution p over values a_i is
q_i = p_i / (1 + x * b_i) where b_i is the constraint's linear form and x
solves the secular equation sum_i p_i b_i / (1 + x b_i) = 0 (one root between
the poles); a t-value constraint is not linear, and is solved by iterating the
linear one with the variance of the previous estimate (the fixed point is the
estimate).

Regularization: a value never seen has probability 0 in the empirical
distribution, and no reweighting can give it mass, so a run of scores all above
1/2 would make "the mean is 1/2" impossible. As fishtest gives an unseen
category 1e-3 of a count, the lowest and highest possible scores are always in
the support, with a count of `EPSILON` when not seen.

Everything is batched: `counts` may have leading dimensions (many tests at
once, each a row of counts over one shared array of values); the simulations
that check the error rates run thousands of tests in lockstep.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

EPSILON = 1e-3  # the count given to the lowest/highest possible score when it was not seen
NELO_PER_T = 800.0 / math.log(10.0)  # normalized Elo per unit of t-value (per match)
_ITERATIONS = 100
_INSIDE = 1.0 - 1e-9
_FIXED_POINT_STEPS = 12


def logistic_score(elo: float) -> float:
    """The expected score of a logistic Elo difference: 1 / (1 + 10^(-elo/400))."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def regularize(values: npt.ArrayLike, counts: npt.ArrayLike, low: float,
               high: float) -> tuple[FloatArray, FloatArray]:
    """(values, counts) with `low` and `high` in the support: given `EPSILON` of a
    count where they were not seen. Values must lie in [low, high]."""
    vals = np.asarray(values, dtype=np.float64)
    cnts = np.asarray(counts, dtype=np.float64)
    if vals.size and (vals.min() < low or vals.max() > high):
        raise ValueError(f"scores must lie in [{low}, {high}]")
    for end in (low, high):
        hit = np.flatnonzero(vals == end)
        if hit.size == 0:
            vals = np.append(vals, end)
            cnts = np.concatenate([cnts, np.zeros((*cnts.shape[:-1], 1))], axis=-1)
            hit = np.array([vals.size - 1])
        column = cnts[..., hit[0]]
        cnts[..., hit[0]] = np.where(column > 0, column, EPSILON)
    return vals, cnts


def _secular(b: FloatArray, p: FloatArray) -> FloatArray:
    """x solving sum_i p_i b_i / (1 + x b_i) = 0 per row (rows need b of both signs
    where p > 0; a row without a sign change gets the pole it runs into).

    The function decreases from +inf to -inf between its poles -1/max(b) and
    -1/min(b): Newton's method from the root of its linearization, falling
    back to bisection whenever a step would leave the bracket."""
    seen = p > 0
    bmax = np.maximum(np.where(seen, b, -np.inf).max(axis=-1), 1e-300)
    bmin = np.minimum(np.where(seen, b, np.inf).min(axis=-1), -1e-300)
    lo, hi = -_INSIDE / bmax, -_INSIDE / bmin  # just inside the poles: 1 + x b > 0
    x = (p * b).sum(axis=-1) / np.maximum((p * b * b).sum(axis=-1), 1e-300)  # x small
    x = np.where((x > lo) & (x < hi), x, 0.0)
    for _ in range(_ITERATIONS):
        d = 1.0 + x[..., None] * b
        f = (p * b / d).sum(axis=-1)
        slope = -(p * (b / d) ** 2).sum(axis=-1)
        lo = np.where(f > 0, x, lo)
        hi = np.where(f > 0, hi, x)
        step = x - f / np.where(slope < 0, slope, -1.0)
        inside = (step >= lo) & (step <= hi)
        x_next = np.where(inside, step, (lo + hi) / 2)
        if np.all(np.abs(x_next - x) <= 1e-12 * (1.0 + np.abs(x))):
            return x_next
        x = x_next
    return x


def _reweighted(b: FloatArray, p: FloatArray) -> FloatArray:
    x = _secular(b, p)
    q: FloatArray = p / (1.0 + x[..., None] * b)
    total: FloatArray = q.sum(axis=-1, keepdims=True)
    return q / total


def mle_mean(a: FloatArray, p: FloatArray, s: float) -> FloatArray:
    """The distribution over `a` closest to `p` (maximum likelihood) with mean `s`."""
    return _reweighted(np.broadcast_to(a - s, p.shape), p)


def mle_t_value(a: FloatArray, p: FloatArray, ref: float, t: float) -> FloatArray:
    """The distribution over `a` closest to `p` with (mean - ref) / sigma = t."""
    q = p
    for _ in range(_FIXED_POINT_STEPS):
        mu = (q * a).sum(axis=-1, keepdims=True)
        sigma = np.sqrt(np.maximum((q * (a - mu) ** 2).sum(axis=-1, keepdims=True), 1e-300))
        b = a - ref - t * sigma * (1.0 + ((mu - a) / sigma) ** 2) / 2.0
        q_next = _reweighted(b, p)
        if np.max(np.abs(q_next - q)) < 1e-10:
            return q_next
        q = q_next
    return q


def _llr(p: FloatArray, n: FloatArray, q0: FloatArray, q1: FloatArray) -> FloatArray:
    seen = p > 0
    ratio = np.log(np.where(seen, q1, 1.0) / np.where(seen, q0, 1.0))
    per_group: FloatArray = np.where(seen, p * ratio, 0.0).sum(axis=-1)
    return n * per_group


def _pdf(counts: FloatArray) -> tuple[FloatArray, FloatArray]:
    total = counts.sum(axis=-1)
    return counts / np.maximum(total, 1e-300)[..., None], total


def llr_logistic(values: FloatArray, counts: FloatArray, elo0: float,
                 elo1: float) -> FloatArray:
    """The log-likelihood ratio of "mean score = L(elo1)" against "= L(elo0)",
    L the logistic curve, over regularized `counts` (see `regularize`)."""
    p, n = _pdf(counts)
    q0 = mle_mean(values, p, logistic_score(elo0))
    q1 = mle_mean(values, p, logistic_score(elo1))
    return _llr(p, n, q0, q1)


def llr_normalized(values: FloatArray, counts: FloatArray, nelo0: float, nelo1: float,
                   matches_per_group: int) -> FloatArray:
    """The log-likelihood ratio of "normalized Elo = nelo1" against "= nelo0".

    Normalized Elo is per match: a group of k matches whose score is their mean
    would, were they independent, have a t-value sqrt(k) times a match's (as
    fishtest scales a game pair's by sqrt(2)); so a group's t is
    sqrt(k) * nelo / (800 / ln 10)."""
    p, n = _pdf(counts)
    scale = math.sqrt(matches_per_group) / NELO_PER_T
    q0 = mle_t_value(values, p, 0.5, nelo0 * scale)
    q1 = mle_t_value(values, p, 0.5, nelo1 * scale)
    return _llr(p, n, q0, q1)
