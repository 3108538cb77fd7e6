"""Head to head per deal (`rating.head_to_head`): the table of cases, and its 95% interval
tested by simulation (it covers the truth 95% of the time, also when a deal's
rotations are correlated, where counting matches as independent does not)."""

from __future__ import annotations

import math
import random

import pytest

from cfarena.server.rating.elo import elo_difference, expected_score
from cfarena.server.rating.head_to_head import head_to_head

A_WINS = [("a", 1), ("b", 2)]
B_WINS = [("a", 2), ("b", 1)]
TIE = [("a", 1), ("b", 1)]


@pytest.mark.parametrize(("results", "matches", "deals", "score"), [
    # one deal of two rotations, each won by a: one deal scored 1, the prior's 1/2
    ([(1, A_WINS), (1, A_WINS)], 2, 1, 0.75),
    ([(1, A_WINS), (1, B_WINS), (2, TIE)], 3, 2, 0.5),
    ([(1, A_WINS), (2, A_WINS), (3, B_WINS)], 3, 3, (1 + 1 + 0 + 0.5) / 4),
    # a bot in two seats plays each of them; a bot never plays itself
    ([(1, [("a", 1), ("b", 2), ("a", 3)])], 1, 1, (0.5 + 0.5) / 2),
    # a third bot's games are not a's against b
    ([(1, [("a", 2), ("c", 1), ("b", 3)])], 1, 1, (1 + 0.5) / 2),
])
def test_cases(results: list[tuple[int, list[tuple[str, int]]]], matches: int, deals: int,
               score: float) -> None:
    pairs = head_to_head(results)
    ab, ba = pairs["a", "b"], pairs["b", "a"]
    assert (ab.matches, ab.deals) == (ba.matches, ba.deals) == (matches, deals)
    assert ab.score == pytest.approx(score)
    assert ba.score == pytest.approx(1 - score)  # the other side of the same games
    assert ab.elo == pytest.approx(-ba.elo)
    assert ab.low <= ab.score <= ab.high


def test_a_clean_sweep_is_finite_with_an_interval_open_above() -> None:
    sweep = head_to_head([(deal, A_WINS) for deal in range(3)])["a", "b"]
    assert math.isfinite(sweep.elo) and sweep.elo > 0
    assert sweep.high == 1.0 and sweep.elo_high == math.inf
    assert math.isfinite(sweep.elo_low)


def test_elo_difference_inverts_the_expected_score() -> None:
    for diff in (-600.0, -35.5, 0.0, 12.0, 400.0):
        assert elo_difference(expected_score(diff, 0.0)) == pytest.approx(diff)
    assert elo_difference(1.0) == math.inf and elo_difference(0.0) == -math.inf


def _coverage(luck: float, by_deal: bool, runs: int = 800, deals: int = 40,
              rotations: int = 4, p: float = 0.6) -> float:
    """How often the interval holds the true score p: a wins each rotation with
    probability p + u, u = +-luck drawn per deal (rotations of a deal share it)."""
    rng = random.Random(7)
    held = 0
    for _ in range(runs):
        results = []
        for deal in range(deals):
            u = luck if rng.random() < 0.5 else -luck
            for rotation in range(rotations):
                key = deal if by_deal else deal * rotations + rotation
                results.append((key, A_WINS if rng.random() < p + u else B_WINS))
        found = head_to_head(results)["a", "b"]
        held += found.low <= p <= found.high
    return held / runs


def test_the_interval_covers_the_truth_95_percent_of_the_time() -> None:
    # 800 runs: the binomial standard error of a 95% coverage is 0.008
    assert 0.925 <= _coverage(luck=0.3, by_deal=True) <= 0.975
    # the same correlated rotations counted as independent matches: far too narrow
    assert _coverage(luck=0.3, by_deal=False) < 0.88
