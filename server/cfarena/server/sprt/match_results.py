"""What a finished match gives a deal group: each seat's result, raw or luck-adjusted.

`cfarena sprt --score raw|adjusted` picks the `ScoreKind`; a group's score is
then `deal_group.group_score` over its matches' `seated_results` (a match record)
or `logged_seated_results` (a stored match: its ranks and game log).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from cfarena.server.match.record import MatchRecord, MatchStatus
from cfarena.server.sprt.deal_group import SeatedResults, placement
from cfarena.server.sprt.luck import adjusted_results, log_luck, record_adjusted_results


class ScoreKind(enum.StrEnum):
    """Which result of a seat a test scores."""

    RAW = "raw"  # placement (deal_group.placement)
    ADJUSTED = "adjusted"  # placement minus the luck of its draws (luck.adjusted_results)


def seated_results(record: MatchRecord, kind: ScoreKind) -> SeatedResults:
    """The seats of a finished match and each seat's result of `kind`."""
    if record.status is not MatchStatus.FINISHED:
        raise ValueError(f"match {record.match_id} did not finish ({record.status.value})")
    results = (placement(record.ranks) if kind is ScoreKind.RAW
               else record_adjusted_results(record))
    return SeatedResults(tuple(record.seat_bots), results)


def logged_seated_results(seats: Sequence[str], ranks: Sequence[int],
                          log: Mapping[str, Any] | None, kind: ScoreKind) -> SeatedResults:
    """The seats of a stored finished match (bot name and rank by seat) and each seat's
    result of `kind`; the adjusted result needs the match's game log."""
    if kind is ScoreKind.RAW:
        return SeatedResults(tuple(seats), placement(ranks))
    if log is None:
        raise ValueError("a luck-adjusted result needs the match's game log")
    return SeatedResults(tuple(seats), adjusted_results(ranks, log_luck(log)))
