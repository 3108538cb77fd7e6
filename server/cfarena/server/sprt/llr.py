"""The generalized log-likelihood ratio of the group scores, in the normal model.

The scores of a test's deal groups are independent draws from an unknown
distribution. A hypothesis fixes one figure of it: "the mean score is s"
(logistic Elo) or "the t-value (mean - 1/2) / sigma is t" (normalized Elo).
The generalized likelihood ratio of two hypotheses compares, under each, the
most likely distribution of the scores; in the normal model (any mean, any
spread) that is the one with the hypothesis' mean and the spread that fits the
scores best, and the log-likelihood ratio per group is

    logistic:    1/2 log(r(s0) / r(s1)),  r(s) = E[(a - s)^2] over the scores a
    normalized:  l(t1) - l(t0),  l(t) = max over u > 0 of log u - S u^2 / 2 + t D u - t^2 / 2,
                 D = E[a] - 1/2, S = E[(a - 1/2)^2]  (u = 1 / sigma; a quadratic's root)

times the number of groups. The logistic form is fishtest's `LLR_alt`, Michel
Van den Bergh's approximation of the generalized SPRT over the empirical
distribution (`LLR_logistic`); the normalized one is the same model's exact
likelihood under fishtest's normalized hypotheses (`LLR_normalized`).

Why the normal model and not the multinomial one fishtest uses (the empirical
distribution reweighted under each hypothesis): fishtest's scores have five
fixed values, all of them plausible; a deal group's score has any value, and
the multinomial model needs a support invented for values not seen. With the
lowest and highest possible scores (0 and 1) in it, a hypothesis "the mean is
1/2" is always met at a bounded price by moving mass onto the unseen far end,
so a group carries at most about log(2 * mean) of evidence however little the
scores vary: with luck-adjusted scores (mean 0.67, sd 0.12 per group) 0.3
where the normal model gives 0.9, and a test needed about 16 groups whatever
the score (docs/TESTING_BOTS.md).
The normal model takes the spread from the scores, as a t-test does.

Regularization: a few groups can show a spread far below the truth (a run of
equal scores shows none), and a spread of 0 makes any hypothesis but the mean
seen impossible. So the empirical distribution is mixed with `PRIOR_COUNT` of
a count at each end of the possible range of scores, [0, 1] (widened to the
scores seen): a prior on the spread, worth a tenth of a group, that stops a
run of equal scores from deciding and fades as groups come in.
tests/sprt/test_error_rates.py checks by simulation that alpha and beta hold.

Everything is batched: `counts` may have leading dimensions (many tests at
once, each a row of counts over one shared array of values); the simulations
that check the error rates run thousands of tests in lockstep.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

PRIOR_COUNT = 0.05  # the count given to each end of the possible range of scores
NELO_PER_T = 800.0 / math.log(10.0)  # normalized Elo per unit of t-value (per match)


def logistic_score(elo: float) -> float:
    """The expected score of a logistic Elo difference: 1 / (1 + 10^(-elo/400))."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def regularized_moments(values: npt.ArrayLike, counts: npt.ArrayLike, low: float,
                        high: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(groups, mean, mean square) per row of `counts` over `values`, the distribution
    mixed with `PRIOR_COUNT` of a count at each end of the row's range: [low, high]
    widened to the values the row has seen. `groups` is the real count."""
    vals = np.asarray(values, dtype=np.float64)
    cnts = np.asarray(counts, dtype=np.float64)
    seen = cnts > 0
    lowest = np.minimum(low, np.where(seen, vals, np.inf).min(axis=-1))
    highest = np.maximum(high, np.where(seen, vals, -np.inf).max(axis=-1))
    groups = cnts.sum(axis=-1)
    total = groups + 2.0 * PRIOR_COUNT
    mean = ((cnts * vals).sum(axis=-1) + PRIOR_COUNT * (lowest + highest)) / total
    square = ((cnts * vals * vals).sum(axis=-1)
              + PRIOR_COUNT * (lowest * lowest + highest * highest)) / total
    return groups, mean, square


def _mean_fit(mean: FloatArray, square: FloatArray, s: float) -> FloatArray:
    """Per group, the normal log-likelihood (less a constant) of mean `s`, the
    spread fitted: -1/2 log E[(a - s)^2]."""
    result: FloatArray = -0.5 * np.log(square - 2.0 * s * mean + s * s)
    return result


def _t_value_fit(mean: FloatArray, square: FloatArray, ref: float, t: float) -> FloatArray:
    """Per group, the normal log-likelihood (less the same constant) of
    (mean - ref) / sigma = t, sigma fitted: log u - S u^2 / 2 + t D u - t^2 / 2 at
    its maximum, u = 1 / sigma the positive root of S u^2 - t D u - 1 = 0."""
    d = mean - ref
    s = square - 2.0 * ref * mean + ref * ref  # E[(a - ref)^2]
    u = (t * d + np.sqrt(t * t * d * d + 4.0 * s)) / (2.0 * s)
    result: FloatArray = np.log(u) - s * u * u / 2.0 + t * d * u - t * t / 2.0 + 0.5
    return result


def llr_logistic(values: FloatArray, counts: FloatArray, elo0: float, elo1: float,
                 score_range: tuple[float, float] = (0.0, 1.0)) -> FloatArray:
    """The log-likelihood ratio of "mean score = L(elo1)" against "= L(elo0)",
    L the logistic curve, per row of `counts` over `values`."""
    groups, mean, square = regularized_moments(values, counts, *score_range)
    s0, s1 = logistic_score(elo0), logistic_score(elo1)
    result: FloatArray = groups * (_mean_fit(mean, square, s1) - _mean_fit(mean, square, s0))
    return result


def llr_normalized(values: FloatArray, counts: FloatArray, nelo0: float, nelo1: float,
                   matches_per_group: int,
                   score_range: tuple[float, float] = (0.0, 1.0)) -> FloatArray:
    """The log-likelihood ratio of "normalized Elo = nelo1" against "= nelo0".

    Normalized Elo is per match: a group of k matches whose score is their mean
    would, were they independent, have a t-value sqrt(k) times a match's (as
    fishtest scales a game pair's by sqrt(2)); so a group's t is
    sqrt(k) * nelo / (800 / ln 10)."""
    groups, mean, square = regularized_moments(values, counts, *score_range)
    scale = math.sqrt(matches_per_group) / NELO_PER_T
    result: FloatArray = groups * (_t_value_fit(mean, square, 0.5, nelo1 * scale)
                                   - _t_value_fit(mean, square, 0.5, nelo0 * scale))
    return result
