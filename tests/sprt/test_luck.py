"""Luck-adjusted point results: unbiased (mean-zero luck) over thousands of simulated matches."""

from __future__ import annotations

import hashlib
import math
import random

import numpy as np
import pytest

from cfarena.engine import Move, MoveKind, apply_move, new_match
from cfarena.match.log_format import record_to_log
from cfarena.match.record import MatchStatus
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.sprt.deal_group import point_results
from cfarena.server.sprt.luck import (
    PIP_WEIGHT,
    adjusted_results,
    adjusted_totals,
    draw_features,
    log_luck,
    luck_sums,
    record_adjusted_results,
    record_luck,
)

MATCHES = 2000
OPTIONS = {"preset": "standard", "rounds": "single"}


def seed_of(i: int) -> int:
    """Seeds of their own: not the fit's ("fit-luck/*") nor a benchmark's."""
    return int.from_bytes(hashlib.sha256(f"luck-test/{i}".encode()).digest()[:8], "big") >> 1


def interval(x: np.ndarray, level: float = 0.999) -> tuple[float, float]:
    from scipy.stats import t as student  # (at import, each xdist worker would pay ~1 s)

    quantile = float(student.ppf(0.5 + level / 2, x.size - 1))
    half = quantile * float(x.std(ddof=1)) / math.sqrt(x.size)
    return float(x.mean()) - half, float(x.mean()) + half


@pytest.fixture(scope="module")
def simulated() -> tuple[np.ndarray, np.ndarray]:
    """Per match and seat: the luck correction, and what a correction that forgets to
    subtract the expectation would charge (PIP_WEIGHT times the drawn pips that stay)."""
    rng = random.Random(7)
    luck, uncentered = [], []
    for i in range(MATCHES):
        policies = [rng.choice(("greedy", "random")) for _ in range(4)]
        record = simulate_record(OPTIONS, 4, seed_of(i), policies)
        luck.append(record_luck(record))
        state = new_match(record.rules, record.players, record.seed)
        charged = [0.0] * 4
        for action in record.actions:
            move = Move.parse(action.move)
            if move.kind is MoveKind.DRAW:
                seat = state.current_seat
                assert seat is not None
                charged[seat] += PIP_WEIGHT * draw_features(state)[0][0]
            apply_move(state, move)
        uncentered.append(charged)
    return np.array(luck), np.array(uncentered)


def test_the_correction_has_mean_zero(simulated: tuple[np.ndarray, np.ndarray]) -> None:
    luck, _ = simulated
    assert np.count_nonzero(luck) > MATCHES  # draws happen: most matches have luck
    for seat in range(4):
        low, high = interval(luck[:, seat])
        assert low <= 0.0 <= high, (seat, low, high)
    low, high = interval(luck[:, 0] - luck[:, 2])  # one seat's minus another's
    assert low <= 0.0 <= high


def test_the_check_detects_a_biased_correction(simulated: tuple[np.ndarray, np.ndarray]) -> None:
    """A correction without its expectation is biased, and the same interval, over the
    same matches, excludes zero: the check above has the power to fail."""
    _, uncentered = simulated
    for seat in range(4):
        low, high = interval(uncentered[:, seat])
        assert high < 0.0, (seat, low, high)


def test_luck_is_zero_sum_and_adjusts_the_points() -> None:
    record = simulate_record(OPTIONS, 4, seed_of(MATCHES + 1), "greedy")
    luck = record_luck(record)
    assert sum(luck) == pytest.approx(0.0, abs=1e-9)
    assert any(abs(c) > 0.5 for c in luck)  # points, not a share of a placement
    totals = adjusted_totals(record.totals, luck)
    assert totals == pytest.approx(tuple(t + c for t, c in zip(record.totals, luck,
                                                               strict=True)))
    adjusted = record_adjusted_results(record)
    assert adjusted == pytest.approx(point_results(totals, 1))
    assert adjusted == adjusted_results(record.totals, 1, luck)


def test_a_log_gives_the_records_luck() -> None:
    record = simulate_record({"preset": "maltese"}, 3, seed_of(MATCHES + 2), "greedy")
    assert any(a.move == "draw" for a in record.actions)
    assert log_luck(record_to_log(record)) == pytest.approx(record_luck(record))


def test_no_draw_no_luck() -> None:
    record = simulate_record(OPTIONS, 4, seed_of(MATCHES + 3), "greedy")
    state = new_match(record.rules, record.players, record.seed)
    moves = [a.move for a in record.actions]
    sums = luck_sums(state, moves)
    draws = sum(1 for m in moves if m == "draw")
    assert (draws == 0) == all(s == (0.0, 0.0) for s in sums)


def test_an_unfinished_match_has_no_adjusted_result() -> None:
    record = simulate_record(OPTIONS, 4, seed_of(MATCHES + 4), "greedy")
    record.status = MatchStatus.ABORTED
    with pytest.raises(ValueError, match="did not finish"):
        record_adjusted_results(record)
