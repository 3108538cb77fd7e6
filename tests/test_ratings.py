"""Multiplayer Elo and the Bradley-Terry fit (cfarena.server.rating.elo, .bradley_terry)."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cfarena.server.rating.bradley_terry import fit_ratings
from cfarena.server.rating.elo import elo_update, expected_score
from cfarena.server.rating.pairwise import INITIAL_ELO, pairwise_games


def test_two_equal_players() -> None:
    assert elo_update({}, [("a", 1), ("b", 2)]) == {"a": 1516.0, "b": 1484.0}
    assert elo_update({}, [("a", 1), ("b", 1)]) == {"a": 1500.0, "b": 1500.0}


def test_k_is_scaled_by_table_size() -> None:
    # four equal players, a clean order: pairs are worth K/3 each
    new = elo_update({}, [("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    step = 32.0 / 3 / 2
    assert new == pytest.approx({"a": 1500 + 3 * step, "b": 1500 + step, "c": 1500 - step,
                                 "d": 1500 - 3 * step})


def test_symmetric_results_and_seat_order_do_not_matter() -> None:
    ratings = {"a": 1600.0, "b": 1450.0, "c": 1500.0}
    one = elo_update(ratings, [("a", 2), ("b", 1), ("c", 3)])
    other = elo_update(ratings, [("c", 3), ("a", 2), ("b", 1)])
    assert one == pytest.approx(other)
    # an upset moves more than an expected win
    upset = elo_update(ratings, [("a", 2), ("b", 1)])
    expected = elo_update(ratings, [("a", 1), ("b", 2)])
    assert upset["b"] - 1450 > expected["a"] - 1600 > 0


def test_expected_score() -> None:
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)
    assert expected_score(1500, 1900) + expected_score(1900, 1500) == pytest.approx(1.0)


def test_a_bot_in_several_seats_does_not_play_itself() -> None:
    assert pairwise_games([("a", 1), ("a", 2), ("b", 3)]) == [("a", "b", 1.0), ("a", "b", 1.0)]
    # a bot alone at the table (all seats) is unchanged
    assert elo_update({"a": 1620.0}, [("a", 1), ("a", 2), ("a", 3)]) == {"a": 1620.0}
    # two seats each beating b: both pairs count, summed
    new = elo_update({}, [("a", 1), ("a", 2), ("b", 3)])
    assert new == pytest.approx({"a": 1516.0, "b": 1484.0})


bots = st.sampled_from(["a", "b", "c", "d", "e", "f"])
tables = st.lists(st.tuples(bots, st.integers(1, 8)), min_size=1, max_size=8)
ratings = st.dictionaries(bots, st.floats(800, 2800, allow_nan=False))


@given(ratings, tables, st.floats(1, 64))
def test_pairwise_elo_is_zero_sum(before: dict[str, float], table: list[tuple[str, int]],
                                  k: float) -> None:
    after = elo_update(before, table, k=k)
    assert set(after) == {bot for bot, _ in table}
    start = sum(before.get(bot, INITIAL_ELO) for bot in after)
    assert sum(after.values()) == pytest.approx(start, abs=1e-6)
    # nobody moves more than K per seat they hold
    for bot, value in after.items():
        seats = sum(1 for b, _ in table if b == bot)
        assert abs(value - before.get(bot, INITIAL_ELO)) <= k * seats + 1e-9


distinct_tables = st.lists(st.tuples(bots, st.integers(1, 8)), min_size=2, max_size=6,
                          unique_by=lambda seat: seat[0])


@given(distinct_tables)
def test_sole_winner_gains_and_sole_loser_loses(table: list[tuple[str, int]]) -> None:
    after = elo_update({}, table)
    ranks = [r for _, r in table]
    for bot, rank in table:
        if rank == min(ranks) and ranks.count(rank) == 1:
            assert after[bot] > INITIAL_ELO
        if rank == max(ranks) and ranks.count(rank) == 1:
            assert after[bot] < INITIAL_ELO
        if len(set(ranks)) == 1:
            assert after[bot] == INITIAL_ELO


def _simulate(strength: dict[str, float], matches: int, players: int, seed: int,
              tie_rate: float = 0.0) -> list[list[tuple[str, int]]]:
    """Plackett-Luce tables: performance = log-strength + Gumbel noise, best gets rank 1."""
    rng = random.Random(seed)
    names = list(strength)
    out = []
    for _ in range(matches):
        seated = rng.sample(names, players)
        perf = sorted(((strength[b] - math.log(-math.log(rng.random())), b) for b in seated),
                      reverse=True)
        ranks, rank = [], 1
        for i, (_, bot) in enumerate(perf):
            if i and rng.random() >= tie_rate:
                rank = i + 1
            ranks.append((bot, rank))
        out.append(ranks)
    return out


def test_fit_ranks_a_stronger_bot_higher_with_separate_intervals() -> None:
    strength = {"strong": 1.2, "mid1": 0.0, "mid2": 0.0, "weak": -0.6}
    fit = fit_ratings(_simulate(strength, 300, 3, seed=11), bootstrap=200, seed=0)
    assert fit["strong"].elo > fit["mid1"].elo > fit["weak"].elo
    assert fit["strong"].elo > fit["mid2"].elo > fit["weak"].elo
    assert fit["strong"].low > max(fit["mid1"].high, fit["mid2"].high)
    assert fit["weak"].high < min(fit["mid1"].low, fit["mid2"].low)
    for estimate in fit.values():
        assert estimate.low < estimate.elo < estimate.high
    assert sum(e.elo for e in fit.values()) / len(fit) == pytest.approx(1500.0)
    # the true gap strong - weak is 1.8 nats = 313 Elo
    assert fit["strong"].elo - fit["weak"].elo == pytest.approx(1.8 * 400 / math.log(10), abs=80)
    assert sum(e.matches for e in fit.values()) == 300 * 3


def test_fit_is_symmetric_and_handles_ties() -> None:
    # a and b tie every match; both beat c equally often
    results = [[("a", 1), ("b", 1), ("c", 3)], [("c", 3), ("b", 1), ("a", 1)]] * 20
    fit = fit_ratings(results, bootstrap=50)
    assert fit["a"].elo == pytest.approx(fit["b"].elo)
    assert fit["a"].elo > fit["c"].elo
    all_tied = fit_ratings([[("x", 1), ("y", 1)]] * 10, bootstrap=20)
    assert all_tied["x"].elo == pytest.approx(1500.0) == all_tied["y"].elo


def test_fit_keeps_undefeated_bots_finite_and_is_reproducible() -> None:
    results = [[("perfect", 1), ("other", 2)]] * 30
    fit = fit_ratings(results, bootstrap=50, seed=3)
    assert math.isfinite(fit["perfect"].elo) and fit["perfect"].elo > fit["other"].elo + 300
    assert fit == fit_ratings(results, bootstrap=50, seed=3)
    assert fit_ratings([]) == {}
    no_ci = fit_ratings(results, bootstrap=0)
    assert no_ci["perfect"].low == no_ci["perfect"].elo == no_ci["perfect"].high


def test_fit_is_order_independent() -> None:
    results = _simulate({"a": 0.5, "b": 0.0, "c": -0.2, "d": 0.1}, 120, 4, seed=2, tie_rate=0.1)
    forward = fit_ratings(results, bootstrap=0)
    backward = fit_ratings(list(reversed(results)), bootstrap=0)
    assert {k: v.elo for k, v in forward.items()} == pytest.approx(
        {k: v.elo for k, v in backward.items()})


def test_distinct_results_with_counts_fit_as_the_matches_they_stand_for() -> None:
    """The ladder's check keeps its history as distinct results with counts: the same
    point estimates, intervals and match counts as the matches themselves, listed in
    the same order (`fit_ratings` merges identical results itself, so both are one fit
    and one bootstrap: what this holds is that merging, and the counts' meaning)."""
    results = _simulate({"a": 0.5, "b": 0.0, "c": -0.2}, 200, 2, seed=4, tie_rate=0.1)
    counts: dict[tuple[tuple[str, int], ...], int] = {}
    for match in results:
        key = tuple(match)
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) < 20  # far fewer than the matches
    grouped = fit_ratings([list(r) for r in counts], bootstrap=50, seed=5,
                          counts=list(counts.values()))
    expanded = fit_ratings([list(r) for r, k in counts.items() for _ in range(k)],
                           bootstrap=50, seed=5)
    assert grouped.keys() == expanded.keys()
    for bot, estimate in expanded.items():
        assert grouped[bot].matches == estimate.matches
        assert (grouped[bot].elo, grouped[bot].low, grouped[bot].high) == pytest.approx(
            (estimate.elo, estimate.low, estimate.high))


@pytest.mark.parametrize("games", [60, 2000])
def test_the_interval_covers_the_true_rating_95_percent_of_the_time(games: int) -> None:
    """Over 300 simulated histories of `games` games with a 100 Elo gap, a's interval
    holds its true rating (1550, the pair centred on 1500) in about 95% of them: 60
    games are resampled match by match, 2,000 (given as two results with counts, as the
    ladder gives its history) by numpy's multinomial over the distinct results
    (`_Resampler`). The standard error of a 95% rate over 300 runs is 1.3 points;
    measured with these seeds: 94.7% and 94.0%. Resamples of the wrong size miss the
    band (the review's mutations: twice the matches 79%, half 98.3%), as do uniform
    weights (15%)."""
    rng = random.Random(9)
    gap = 100.0
    p = 1 / (1 + 10 ** (-gap / 400))
    runs, held = 300, 0
    for run in range(runs):
        wins = sum(rng.random() < p for _ in range(games))
        results = [[("a", 1), ("b", 2)], [("a", 2), ("b", 1)]]
        fit = fit_ratings(results, bootstrap=100, seed=run, counts=[wins, games - wins])
        held += fit["a"].low <= 1500 + gap / 2 <= fit["a"].high
    assert 0.91 <= held / runs <= 0.975, held / runs


def test_a_tournaments_bootstrap_does_not_load_numpy() -> None:
    """Up to `NUMPY_FROM_DRAWS` draws the bootstrap draws in pure Python: a tournament's
    standings (every `run-tournament` prints them) do not pay for numpy's import; a
    ladder's long history does, and draws over its distinct results."""
    probe = ("import sys\n"
             "from cfarena.server.rating.bradley_terry import fit_ratings\n"
             "fit_ratings([[('a', 1), ('b', 2)], [('a', 2), ('b', 1)]], bootstrap=200,"
             " counts=[{0}, 3])\n"
             "print('numpy' in sys.modules)")
    loaded = [subprocess.run([sys.executable, "-c", probe.format(k)], check=True,
                             capture_output=True, text=True).stdout.strip()
              for k in (5, 1000)]
    assert loaded == ["False", "True"]


def test_fit_speed_1000_matches_200_resamples() -> None:
    strength = {f"bot{i}": i * 0.2 for i in range(8)}
    results = _simulate(strength, 1000, 4, seed=1)
    start = time.perf_counter()
    fit = fit_ratings(results, bootstrap=200)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0  # about 0.2 s on a laptop; generous for slow CI
    assert fit["bot7"].elo > fit["bot0"].elo
