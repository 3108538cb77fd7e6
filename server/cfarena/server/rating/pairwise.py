"""A match's ranks as pairwise games, what the Elo and the Bradley-Terry ratings both rate.

Pure functions, no I/O. A match result is a sequence of `(bot, rank)`, one per
seat (rank 1 = best, equal ranks = shared). Every pair of seats counts as one
game: the lower rank wins (1), equal ranks draw (0.5 each).

The same bot may sit in several seats of one match (when a tournament has fewer
bots than seats at a table). Pairs of seats held by the same bot are skipped:
a bot never plays itself. Every other pair counts, so a bot in two seats plays
(and is rated on) each of its seats' pairs; its Elo changes are summed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

B = TypeVar("B", bound=Hashable)

INITIAL_ELO = 1500.0  # the Elo scale's centre: a new bot's rating, the fit's mean

MatchRanks = Sequence[tuple[B, int]]


def pairwise_games(ranks: MatchRanks[B]) -> list[tuple[B, B, float]]:
    """The games of one match: `(a, b, score of a)` for every pair of seats of distinct bots."""
    games: list[tuple[B, B, float]] = []
    for i, (a, rank_a) in enumerate(ranks):
        for b, rank_b in ranks[i + 1 :]:
            if a == b:
                continue
            score = 1.0 if rank_a < rank_b else 0.5 if rank_a == rank_b else 0.0
            games.append((a, b, score))
    return games
