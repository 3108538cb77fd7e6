"""The SPRT keeps its error rates: checked over thousands of simulated tests.

Group scores are drawn from a parametric model of a deal group's score (the mean
of 8 head-to-head results that are each 0 or 1: values k/8, binomial), so that
thousands of tests run in seconds; benchmarks/sprt.py plays real matches. Under
H0's truth (a self-test: NEW is OLD, the distribution symmetric about 1/2) H1
must be accepted at most alpha of the time; under H1's truth (NEW better by
exactly elo1, the small gap the test is built to find) H0 at most beta. "At
most" with the binomial interval: the rate's exact 95% interval must reach
down to alpha (beta) or below.

SciPy is imported where it is used: `import scipy.stats` costs about a second of CPU,
and every pytest-xdist worker imports this module to collect it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from cfarena.server.sprt.llr import NELO_PER_T, logistic_score
from cfarena.server.sprt.sequential import EloModel, SprtBounds, Verdict
from cfarena.server.sprt.simulation import simulate_tests

HALVES = 8  # results per group
VALUES = np.arange(HALVES + 1) / HALVES
MATCHES_PER_GROUP = 4
TESTS = 1000
# H1's Elo: a group's t-value of about 0.12 at elo1 (sqrt(4) * 20 / 347; logistic 30 Elo
# is a mean of 0.543, sd 0.177). Larger steps per group: test_large_steps_keep_alpha_and_beta.
ELO1 = {EloModel.NORMALIZED: 20.0, EloModel.LOGISTIC: 30.0}


def distribution(p: float) -> np.ndarray:
    from scipy.stats import binom

    return binom.pmf(np.arange(HALVES + 1), HALVES, p)


def p_at(bounds: SprtBounds, elo: float) -> float:
    """The binomial p whose group scores have (logistic or normalized) Elo `elo`."""
    if bounds.model is EloModel.LOGISTIC:
        return logistic_score(elo)
    t = math.sqrt(MATCHES_PER_GROUP) * elo / NELO_PER_T  # a group's t-value

    def gap(p: float) -> float:
        return (p - 0.5) / math.sqrt(p * (1 - p) / HALVES) - t

    from scipy.optimize import brentq

    return float(brentq(gap, 0.5, 0.999))


@pytest.mark.parametrize("model", list(EloModel))
def test_self_tests_accept_h1_at_most_alpha(model: EloModel) -> None:
    bounds = SprtBounds(0.0, ELO1[model], 0.05, 0.05, model)
    sim = simulate_tests(VALUES, distribution(0.5), bounds, MATCHES_PER_GROUP, TESTS,
                         max_matches=40_000, seed=11)
    rate, low, high = sim.rate(Verdict.H1)
    assert sim.count(Verdict.INCONCLUSIVE) == 0
    assert low <= bounds.alpha, (rate, low, high)
    assert sim.rate(Verdict.H0)[0] >= 1 - bounds.alpha - 0.03  # and the test has power


@pytest.mark.parametrize("model", list(EloModel))
def test_a_small_gap_is_rejected_at_most_beta(model: EloModel) -> None:
    bounds = SprtBounds(0.0, ELO1[model], 0.05, 0.1, model)
    sim = simulate_tests(VALUES, distribution(p_at(bounds, bounds.elo1)), bounds,
                         MATCHES_PER_GROUP, TESTS, max_matches=40_000, seed=12)
    rate, low, high = sim.rate(Verdict.H0)
    assert sim.count(Verdict.INCONCLUSIVE) == 0
    assert low <= bounds.beta, (rate, low, high)
    assert sim.rate(Verdict.H1)[0] >= 1 - bounds.beta - 0.03


# The default score (luck-adjusted points) is not on a grid of k/8 and not bounded by
# [0, 1]: a heavy-tailed model of it (Student's t, 3 degrees of freedom, scale 0.1, on a
# grid of step 0.125 over [-0.25, 1.25]: few values keep it fast), so that the support is
# widened past 0 and 1.
POINT_VALUES = np.linspace(-0.25, 1.25, 13)


def points_distribution(centre: float) -> np.ndarray:
    from scipy.stats import t as student

    weights = student.pdf((POINT_VALUES - centre) / 0.1, 3)
    return weights / weights.sum()


def at_elo(bounds: SprtBounds, values: np.ndarray,
           distribution: Callable[[float], np.ndarray]) -> float:
    """The centre at which `distribution(centre)` (over `values`) has elo1 in the
    bounds' Elo model."""
    def gap(centre: float) -> float:
        p = distribution(centre)
        mean = float(p @ values)
        if bounds.model is EloModel.LOGISTIC:
            return mean - logistic_score(bounds.elo1)
        sd = math.sqrt(float(p @ (values - mean) ** 2))
        return (mean - 0.5) / sd - math.sqrt(MATCHES_PER_GROUP) * bounds.elo1 / NELO_PER_T

    from scipy.optimize import brentq

    return float(brentq(gap, 0.5, 0.9))


@pytest.mark.parametrize("model", list(EloModel))
def test_point_scores_keep_alpha_and_beta(model: EloModel) -> None:
    bounds = SprtBounds(0.0, ELO1[model], 0.05, 0.05, model)
    self_test = simulate_tests(POINT_VALUES, points_distribution(0.5), bounds,
                               MATCHES_PER_GROUP, TESTS, max_matches=40_000, seed=14)
    assert self_test.count(Verdict.INCONCLUSIVE) == 0
    assert self_test.rate(Verdict.H1)[1] <= bounds.alpha, self_test.rate(Verdict.H1)
    at_elo1 = simulate_tests(POINT_VALUES,
                             points_distribution(at_elo(bounds, POINT_VALUES, points_distribution)),
                             bounds, MATCHES_PER_GROUP, TESTS, max_matches=40_000, seed=15)
    assert at_elo1.count(Verdict.INCONCLUSIVE) == 0
    assert at_elo1.rate(Verdict.H0)[1] <= bounds.beta, at_elo1.rate(Verdict.H0)


# Large steps per group: logistic [0, 75] at sd 0.12 is benchmarks/sprt.py's smart vs
# greedy on luck-adjusted points (H1 a mean of 0.607, 0.9 sd per group: a test decides
# in a dozen groups, on the spread seen in those few); normalized [0, 40] is a group
# t-value of 0.23, where the earlier multinomial LLR's beta was about twice too high. The
# score is continuous (normal, on a grid of step 0.005).
FINE_VALUES = np.linspace(0.0, 1.0, 201)


def normal_distribution(centre: float, sd: float) -> np.ndarray:
    from scipy.stats import norm

    weights = norm.pdf((FINE_VALUES - centre) / sd)
    return weights / weights.sum()


@pytest.mark.parametrize(("model", "elo1", "sd"), [(EloModel.LOGISTIC, 75.0, 0.12),
                                                   (EloModel.NORMALIZED, 40.0, 0.12)])
def test_large_steps_keep_alpha_and_beta(model: EloModel, elo1: float, sd: float) -> None:
    bounds = SprtBounds(0.0, elo1, 0.05, 0.05, model)
    self_test = simulate_tests(FINE_VALUES, normal_distribution(0.5, sd), bounds,
                               MATCHES_PER_GROUP, TESTS, max_matches=40_000, seed=16)
    assert self_test.count(Verdict.INCONCLUSIVE) == 0
    assert self_test.rate(Verdict.H1)[1] <= bounds.alpha, self_test.rate(Verdict.H1)
    centre = at_elo(bounds, FINE_VALUES, lambda c: normal_distribution(c, sd))
    at_elo1 = simulate_tests(FINE_VALUES, normal_distribution(centre, sd), bounds,
                             MATCHES_PER_GROUP, TESTS, max_matches=40_000, seed=17)
    assert at_elo1.count(Verdict.INCONCLUSIVE) == 0
    assert at_elo1.rate(Verdict.H0)[1] <= bounds.beta, at_elo1.rate(Verdict.H0)


def test_the_check_can_fail() -> None:
    """The same simulation on a biased 'self-test' (NEW slightly better) accepts H1
    far more often than alpha: the checks above would catch a test that does."""
    bounds = SprtBounds(0.0, ELO1[EloModel.LOGISTIC], model=EloModel.LOGISTIC)
    sim = simulate_tests(VALUES, distribution(p_at(bounds, bounds.elo1 / 2)), bounds,
                         MATCHES_PER_GROUP, TESTS // 4, max_matches=40_000, seed=13)
    assert sim.rate(Verdict.H1)[1] > bounds.alpha
