"""What a finished match gives a deal group: each seat's result, raw or luck-adjusted.

`cfarena sprt --score adjusted|raw|placement` picks the `ScoreKind`; a group's
score is then `deal_group.group_score` over its matches' `seated_results` (a
match record) or `log_seated_results` (a stored game log).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cfarena.match.record import MatchRecord, MatchStatus
from cfarena.server.sprt.deal_group import SeatedResults, placement, point_results
from cfarena.server.sprt.luck import adjusted_results, log_luck, record_luck


class ScoreKind(enum.StrEnum):
    """Which result of a seat a test scores."""

    ADJUSTED = "adjusted"  # points plus the luck of its draws (luck.adjusted_results)
    RAW = "raw"  # points (deal_group.point_results)
    PLACEMENT = "placement"  # placement (deal_group.placement), as ratings rank


def results(kind: ScoreKind, ranks: Sequence[int], totals: Sequence[float], rounds: int,
            luck: Callable[[], Sequence[float]]) -> tuple[float, ...]:
    """Each seat's result of `kind` from a finished match's ranks, totals and rounds
    played; `luck()` (each seat's luck in points) is called only for ADJUSTED."""
    if kind is ScoreKind.PLACEMENT:
        return placement(ranks)
    if kind is ScoreKind.RAW:
        return point_results(totals, rounds)
    return adjusted_results(totals, rounds, luck())


def seated_results(record: MatchRecord, kind: ScoreKind) -> SeatedResults:
    """The seats of a finished match and each seat's result of `kind`."""
    if record.status is not MatchStatus.FINISHED:
        raise ValueError(f"match {record.match_id} did not finish ({record.status.value})")
    return SeatedResults(tuple(record.seat_bots),
                         results(kind, record.ranks, record.totals, len(record.round_scores),
                                 lambda: record_luck(record)))


def log_seated_results(log: Mapping[str, Any], kind: ScoreKind) -> SeatedResults:
    """The seats of a finished match's game log and each seat's result of `kind`
    (ValueError if the log has no result; gamelog.LogError if it cannot be replayed)."""
    result = log.get("result") or {}
    ranks, totals, rounds = result.get("ranks"), result.get("totals"), result.get("round_scores")
    if log.get("status") != MatchStatus.FINISHED.value or not ranks or not totals or not rounds:
        raise ValueError(f"match {log.get('match_id')} has no result to score")
    return SeatedResults(tuple(str(s) for s in log.get("seats", [])),
                         results(kind, ranks, totals, len(rounds), lambda: log_luck(log)))
