"""Two bots' results against each other: their pairwise games (`rating.pairwise`) in the
matches where both sat, as a score and an Elo difference with a 95% interval.

Pure functions, no I/O. The unit of evidence is the deal, not the match: the
rotations of one deal are not independent (duplicate play makes their luck
cancel), so a deal's games give one value, the bot's mean score in them, and the
interval is the normal one of the mean over deals (on the score scale, then
turned into Elo: `elo.elo_difference`). Like the Bradley-Terry fit's weak prior,
one virtual deal scored 1/2 each way is added, so a clean sweep of a few deals
shows a finite estimate (and an interval open towards infinity) rather than an
infinite one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from statistics import NormalDist

from cfarena.server.rating.elo import elo_difference
from cfarena.server.rating.pairwise import B, MatchRanks, pairwise_games

Z95 = NormalDist().inv_cdf(0.975)
PRIOR_DEALS = 1  # virtual deals scored 1/2 (as the Bradley-Terry fit's prior game)


@dataclass(frozen=True, slots=True)
class HeadToHead:
    """One bot against another: the matches and deals where both sat, its mean score
    per deal (1/2: even; with the prior deal) and that score's 95% interval."""

    matches: int
    deals: int
    score: float
    low: float
    high: float

    @property
    def elo(self) -> float:
        return elo_difference(self.score)

    @property
    def elo_low(self) -> float:
        return elo_difference(self.low)

    @property
    def elo_high(self) -> float:
        return elo_difference(self.high)


def head_to_head(results: Iterable[tuple[Hashable, MatchRanks[B]]]
                 ) -> dict[tuple[B, B], HeadToHead]:
    """Every ordered pair of bots that met, (a, b) -> a's results against b, from one
    (deal, ranks) per finished match (`ranks`: (bot, rank) per seat; matches with the
    same deal are its rotations). A bot holding several seats plays each of them."""
    deals: dict[tuple[B, B], dict[Hashable, list[float]]] = {}  # deal -> [score, games]
    matches: dict[tuple[B, B], int] = {}
    for deal, ranks in results:
        met: set[tuple[B, B]] = set()
        for a, b, score in pairwise_games(ranks):
            for pair, points in (((a, b), score), ((b, a), 1.0 - score)):
                got = deals.setdefault(pair, {}).setdefault(deal, [0.0, 0.0])
                got[0] += points
                got[1] += 1.0
                met.add(pair)
        for pair in met:
            matches[pair] = matches.get(pair, 0) + 1
    return {pair: _estimate(matches[pair], [s / n for s, n in by_deal.values()])
            for pair, by_deal in deals.items()}


def _estimate(matches: int, deal_scores: list[float]) -> HeadToHead:
    values = [*deal_scores, *[0.5] * PRIOR_DEALS]
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z95 * spread / math.sqrt(n)
    return HeadToHead(matches, len(deal_scores), mean, max(0.0, mean - half),
                      min(1.0, mean + half))
