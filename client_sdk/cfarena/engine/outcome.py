"""Round and match outcomes, and ranking by totals (RULES.md §5)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from cfarena.engine.events import RoundEnd
from cfarena.engine.rules import TieBreak


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    """How one round ended: per-seat scores (pips left, 0-0 as double_blank)."""

    round_index: int
    reason: RoundEnd
    scores: tuple[int, ...]
    went_out: int | None  # the seat that went out, if any


class MatchEnd(enum.Enum):
    """Why a match ended."""

    ROUNDS_PLAYED = "rounds_played"  # the configured number of rounds was played
    SCORE_LIMIT = "score_limit"  # end_at_score: a total went above the limit


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished match: totals, ranks (1 = best, equal ranks = shared) and why it ended."""

    reason: MatchEnd
    totals: tuple[int, ...]
    ranks: tuple[int, ...]
    rounds: tuple[RoundOutcome, ...]

    @property
    def winners(self) -> tuple[int, ...]:
        return tuple(s for s, r in enumerate(self.ranks) if r == 1)


def rank_seats(
    round_scores: Sequence[Sequence[int]],
    tie_break: TieBreak,
    forfeited: Sequence[int] = (),
) -> tuple[int, ...]:
    """Competition ranks (1 = best) from per-round scores; lower totals rank higher.

    Seats in `forfeited` rank below every other seat (and share among themselves
    by the same ordering). Equal keys share a rank ("1, 1, 3").
    """
    seats = len(round_scores[0]) if round_scores else 0
    if not round_scores:
        raise ValueError("rank_seats needs at least one round")
    lost = set(forfeited)

    def key(seat: int) -> tuple[int, ...]:
        per_round = [r[seat] for r in round_scores]
        total = sum(per_round)
        if tie_break is TieBreak.ZERO_ROUNDS:
            zeros = sum(1 for s in per_round if s == 0)
            nonzero = [s for s in per_round if s != 0]
            lowest = min(nonzero) if nonzero else 0
            return (1 if seat in lost else 0, total, -zeros, lowest)
        return (1 if seat in lost else 0, total)

    keys = [key(s) for s in range(seats)]
    return tuple(1 + sum(1 for other in keys if other < keys[s]) for s in range(seats))
