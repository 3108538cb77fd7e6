"""Incremental multiplayer Elo over a match's pairwise games (`rating.pairwise`).

Pure functions, no I/O. `elo_update` is sequential and order-dependent; the
order-independent estimate is `rating.bradley_terry.fit_ratings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from cfarena.server.rating.pairwise import INITIAL_ELO, B, MatchRanks, pairwise_games

DEFAULT_K = 32.0


def expected_score(rating: float, opponent: float) -> float:
    """Expected score of `rating` against `opponent` (logistic, 400-point scale)."""
    return 1.0 / (1.0 + math.pow(10.0, (opponent - rating) / 400.0))


def elo_update(
    ratings: Mapping[B, float],
    ranks: MatchRanks[B],
    k: float = DEFAULT_K,
    initial: float = INITIAL_ELO,
) -> dict[B, float]:
    """New ratings of the bots in one match (bots absent from `ratings` start at `initial`).

    Each pair of seats is a game scored against the pre-match ratings with
    K / (n - 1), n = seats at the table, so one seat moves at most about K per
    match whatever the table size. Rating changes are zero-sum. Only the bots
    of the match are returned.
    """
    before = {bot: ratings.get(bot, initial) for bot, _ in ranks}
    if len(ranks) < 2:
        return before
    step = k / (len(ranks) - 1)
    delta = dict.fromkeys(before, 0.0)
    for a, b, score in pairwise_games(ranks):
        change = step * (score - expected_score(before[a], before[b]))
        delta[a] += change
        delta[b] -= change
    return {bot: before[bot] + delta[bot] for bot in before}


def elo_difference(score: float) -> float:
    """The rating difference whose expected score is `score` (the inverse of
    `expected_score`): 400 log10(score / (1 - score)); infinite at 0 and 1."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return 400.0 * math.log10(score / (1.0 - score))
