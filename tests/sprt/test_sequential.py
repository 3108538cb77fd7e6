"""The generalized LLR, the sequential test's verdicts and its estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cfarena.server.sprt.llr import (
    NELO_PER_T,
    PRIOR_COUNT,
    logistic_score,
    regularized_moments,
)
from cfarena.server.sprt.sequential import (
    EloModel,
    SequentialTest,
    SprtBounds,
    Verdict,
    estimate,
    llr,
    logistic_elo,
)

VALUES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def test_llr_matches_its_normal_approximation_on_many_groups() -> None:
    """With many groups the generalized LLR approaches the normal one:
    n (t1 - t0) (2 t - t0 - t1) / 2 for t-values, n (s1 - s0) (2 m - s0 - s1) / (2 var)
    for means."""
    counts = np.array([[150.0, 260.0, 300.0, 280.0, 160.0], [160.0, 280.0, 300.0, 260.0, 150.0]])
    p = counts / counts.sum(axis=1, keepdims=True)
    n = counts.sum(axis=1)
    mean = (p * VALUES).sum(axis=1)
    var = (p * (VALUES - mean[:, None]) ** 2).sum(axis=1)
    k = 4
    t = (mean - 0.5) / np.sqrt(var)
    t1 = math.sqrt(k) * 5.0 / NELO_PER_T
    normal = n * t1 * (2 * t - t1) / 2
    got = llr(SprtBounds(0.0, 5.0), VALUES, counts, k)
    assert got == pytest.approx(normal, rel=0.02)
    assert got[0] > 0 > got[1]
    s1 = logistic_score(10.0)
    normal = n * (s1 - 0.5) * (2 * mean - 0.5 - s1) / (2 * var)
    got = llr(SprtBounds(0.0, 10.0, model=EloModel.LOGISTIC), VALUES, counts, k)
    assert got == pytest.approx(normal, rel=0.02)


def test_batched_rows_equal_single_tests() -> None:
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 6, size=(7, VALUES.size)).astype(float)
    counts[:, 2] += 1
    for model in EloModel:
        bounds = SprtBounds(0.0, 20.0, model=model)
        rows = llr(bounds, VALUES, counts, 2)
        for row, c in zip(rows, counts, strict=True):
            test = SequentialTest(bounds, 2)
            for value, times in zip(VALUES, c, strict=True):
                for _ in range(int(times)):
                    test.add(float(value))
            assert test.llr == pytest.approx(row, rel=1e-9, abs=1e-9)


def test_the_spread_is_regularized() -> None:
    """The distribution is mixed with PRIOR_COUNT at each end of the possible range
    (widened to the scores seen), so a run of equal scores, which shows no spread,
    does not decide at once: its evidence grows with the run."""
    groups, mean, square = regularized_moments([0.75, 1.0], [3.0, 2.0], 0.0, 1.0)
    total = 5.0 + 2 * PRIOR_COUNT
    assert groups == 5.0
    assert mean == pytest.approx((3 * 0.75 + 2 * 1.0 + PRIOR_COUNT) / total)
    assert square == pytest.approx((3 * 0.5625 + 2 * 1.0 + PRIOR_COUNT) / total)
    _, mean, _ = regularized_moments([1.5], [1.0], 0.0, 1.0)
    assert mean == pytest.approx((1.5 + PRIOR_COUNT * 1.5) / (1 + 2 * PRIOR_COUNT))
    test = SequentialTest(SprtBounds(0.0, 100.0, model=EloModel.LOGISTIC), 2)
    previous = 0.0
    for _ in range(3):
        test.add(0.5)
        assert math.isfinite(test.llr) and test.llr < previous
        previous = test.llr
    assert test.verdict() is Verdict.CONTINUE
    while test.verdict() is Verdict.CONTINUE:
        test.add(0.5)
    assert test.verdict() is Verdict.H0 and test.groups <= 6


def test_verdicts_at_the_bounds_and_the_cap() -> None:
    bounds = SprtBounds(0.0, 5.0, alpha=0.05, beta=0.1)
    assert bounds.upper == pytest.approx(math.log(0.9 / 0.05))
    assert bounds.lower == pytest.approx(math.log(0.1 / 0.95))
    assert bounds.verdict(bounds.upper, 10, None) is Verdict.H1
    assert bounds.verdict(bounds.lower, 10, None) is Verdict.H0
    assert bounds.verdict(0.0, 10, 100) is Verdict.CONTINUE
    assert bounds.verdict(0.0, 100, 100) is Verdict.INCONCLUSIVE
    assert bounds.verdict(bounds.upper, 100, 100) is Verdict.H1


def test_a_test_decides_and_reports() -> None:
    up = SequentialTest(SprtBounds(0.0, 50.0), 4, max_matches=4000)
    rng = np.random.default_rng(1)
    while up.verdict() is Verdict.CONTINUE:
        up.add(float(rng.choice(VALUES, p=[0.05, 0.15, 0.3, 0.3, 0.2])))
    status = up.status()
    assert status.verdict is Verdict.H1 and status.llr >= status.upper
    assert status.matches == 4 * status.groups
    est = status.estimate
    assert est.score_low < est.score < est.score_high
    assert est.elo_low < est.elo < est.elo_high and est.elo > 0
    assert est.nelo_low < est.nelo < est.nelo_high
    assert 0.5 < est.los <= 1.0
    capped = SequentialTest(SprtBounds(0.0, 5.0), 4, max_matches=8)
    capped.add(0.5)
    capped.add(0.5)
    assert capped.verdict() is Verdict.INCONCLUSIVE


def test_estimate_from_known_scores() -> None:
    est = estimate([0.25, 0.75, 0.5, 1.0], matches_per_group=2)
    sd = float(np.std([0.25, 0.75, 0.5, 1.0], ddof=1))
    assert est.score == pytest.approx(0.625)
    assert est.score_high - est.score == pytest.approx(1.959964 * sd / 2, rel=1e-5)
    assert est.elo == pytest.approx(logistic_elo(0.625))
    assert est.nelo == pytest.approx(NELO_PER_T * 0.125 / (sd * math.sqrt(2)))
    assert math.isnan(estimate([], 2).score)
    assert logistic_elo(0.5) == 0.0 and logistic_elo(1.0) == math.inf


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"elo0": 5.0, "elo1": 5.0}, "below elo1"),
    ({"alpha": 0.0}, "alpha"),
    ({"beta": 0.6}, "beta"),
])
def test_bad_bounds_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SprtBounds(**kwargs)  # type: ignore[arg-type]


def test_bad_tests_are_refused() -> None:
    with pytest.raises(ValueError, match="matches_per_group"):
        SequentialTest(SprtBounds(), 0)
    with pytest.raises(ValueError, match="at least one deal group"):
        SequentialTest(SprtBounds(), 4, max_matches=3)
    with pytest.raises(ValueError, match="finite"):
        SequentialTest(SprtBounds(), 4).add(math.nan)
