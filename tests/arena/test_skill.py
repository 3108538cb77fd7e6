"""The online rating (openskill Plackett-Luce), case by case."""

from __future__ import annotations

import random

import pytest

from cfarena.server.rating.online import (
    ELO_BASE,
    ELO_PER_MU,
    INITIAL_MU,
    INITIAL_SIGMA,
    K_SIGMA,
    Skill,
    rate_entrants,
    rate_match,
)


def test_a_new_bot_shows_zero_and_1500() -> None:
    new = Skill()
    assert (new.mu, new.sigma, new.games) == (INITIAL_MU, INITIAL_SIGMA, 0)
    assert new.conservative == pytest.approx(INITIAL_MU - K_SIGMA * INITIAL_SIGMA)
    assert new.conservative == pytest.approx(0.0)
    assert new.elo == pytest.approx(ELO_BASE)
    assert pytest.approx(29.5, abs=0.1) == ELO_PER_MU


@pytest.mark.parametrize(("ranks", "order"), [
    ([1, 2], "a>b"),
    ([2, 1], "b>a"),
    ([1, 1], "a=b"),
    ([1, 2, 3, 4], "a>b>c>d"),
    ([3, 1, 1, 4], "b=c>a>d"),
    ([1, 2, 2, 2], "a>b=c=d"),
    # openskill 6.2 alone gives c the winners' update here (issues #155, #201)
    ([1, 1, 2, 3], "a=b>c>d"),
])
def test_ranks_move_ratings_in_order(ranks: list[int], order: str) -> None:
    after = rate_match([Skill()] * len(ranks), ranks)
    mu = {"abcd"[i]: s.mu for i, s in enumerate(after)}
    for group_above, group_below in zip(order.split(">"), order.split(">")[1:], strict=False):
        for x in group_above.split("="):
            for y in group_below.split("="):
                assert mu[x] > mu[y], (order, mu)
    for group in order.split(">"):
        tied = [mu[x] for x in group.split("=")]
        assert max(tied) - min(tied) < 1e-9, (order, mu)  # ties move alike
    assert all(s.games == 1 and s.sigma < INITIAL_SIGMA for s in after)


def test_a_tie_between_equals_changes_no_mean() -> None:
    after = rate_match([Skill(), Skill()], [1, 1])
    assert [s.mu for s in after] == pytest.approx([INITIAL_MU, INITIAL_MU])
    assert all(s.sigma < INITIAL_SIGMA for s in after)  # but it was informative


def test_an_upset_moves_more_than_the_expected() -> None:
    strong, weak = Skill(35.0, 2.0, 50), Skill(15.0, 2.0, 50)
    expected = rate_match([strong, weak], [1, 2])
    upset = rate_match([strong, weak], [2, 1])
    assert abs(upset[0].mu - strong.mu) > 5 * abs(expected[0].mu - strong.mu)


def test_repeated_results_order_the_bots() -> None:
    rng = random.Random(1)
    strengths = {"random": 0.0, "greedy": 1.0, "smart": 2.0, "montecarlo": 3.0}
    skills = {b: Skill() for b in strengths}
    for _ in range(300):
        table = rng.sample(sorted(strengths), 3)
        noisy = {b: strengths[b] + rng.gauss(0, 1.0) for b in table}
        ranks = [1 + sorted(noisy.values(), reverse=True).index(noisy[b]) for b in table]
        for b, s in zip(table, rate_match([skills[b] for b in table], ranks), strict=True):
            skills[b] = s
    ordered = sorted(skills, key=lambda b: skills[b].conservative)
    assert ordered == ["random", "greedy", "smart", "montecarlo"]


def test_an_entrant_in_two_seats_counts_one_game() -> None:
    before = {(1, ""): Skill(), (2, "v"): Skill()}
    after = rate_entrants(before, [((1, ""), 1), ((2, "v"), 2), ((1, ""), 3)])
    assert after[(1, "")].games == 1 and after[(2, "v")].games == 1
    seats = rate_match([Skill(), Skill(), Skill()], [1, 2, 3])
    assert after[(1, "")].mu == pytest.approx((seats[0].mu + seats[2].mu) / 2)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="one rank per seat"):
        rate_match([Skill(), Skill()], [1])
    with pytest.raises(ValueError, match="at least 2 seats"):
        rate_match([Skill()], [1])
