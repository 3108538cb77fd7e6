"""Writing a schedule: matches stored once by key, checked against what is stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import Match, MatchSeat, MatchStatus, Tournament
from cfarena.server.storage.values import MatchPlan

_INT64 = 2**63


def default_pool(rules: Mapping[str, Any], players: int) -> str:
    return f"{rules.get('preset', 'custom')}/{players}p"


def tournament_pool(tournament_id: int) -> str:
    """The rating pool of a tournament's matches: its own, never the ladder's (0008)."""
    return f"tournament/{tournament_id}"


def same_tournament(tournament_id: int | None) -> Any:
    """The condition selecting the matches of a tournament (None: outside any)."""
    if tournament_id is None:
        return Match.tournament_id.is_(None)
    return Match.tournament_id == tournament_id


def check_plan(plan: MatchPlan) -> None:
    """ValueError for a plan no match can follow (checked before anything is written)."""
    if not plan.key:
        raise ValueError("a match plan needs a key")
    if plan.players < 2 or len(plan.seat_bot_ids) != plan.players:
        raise ValueError(f"match {plan.key!r}: {plan.players} players but seats "
                         f"{list(plan.seat_bot_ids)}")
    if plan.seat_versions and (len(plan.seat_versions) != plan.players
                               or any(len(v) > 64 for v in plan.seat_versions)):
        raise ValueError(f"match {plan.key!r}: seat versions {list(plan.seat_versions)} "
                         f"(one per seat, at most 64 characters)")
    if not -_INT64 <= plan.seed < _INT64:
        raise ValueError(f"match {plan.key!r}: seed {plan.seed} does not fit 64 bits")


def schedule_matches(s: Session, tournament_id: int | None, plans: Sequence[MatchPlan]
                     ) -> list[str]:
    """`Database.schedule_matches` in its session `s`, the plans checked (`check_plan`)."""
    if tournament_id is not None and s.get(Tournament, tournament_id) is None:
        raise StorageError(f"no tournament {tournament_id}")
    ordinal = s.scalar(
        select(func.max(Match.ordinal)).where(same_tournament(tournament_id))
    )
    ordinal = -1 if ordinal is None else ordinal
    ids: list[str] = []
    for plan in plans:
        match_id = plan.key if tournament_id is None else f"T{tournament_id}-{plan.key}"
        existing = s.get(Match, match_id)
        if existing is not None:
            _check_same(s, existing, tournament_id, plan)
            ids.append(match_id)
            continue
        ordinal += 1
        s.add(Match(
            id=match_id, tournament_id=tournament_id, key=plan.key, ordinal=ordinal,
            pool=(tournament_pool(tournament_id) if tournament_id is not None
                  else plan.pool or default_pool(plan.rules, plan.players)), seed=plan.seed,
            rules=dict(plan.rules), players=plan.players,
            status=MatchStatus.SCHEDULED.value, created_at=utc_now(),
        ))
        s.flush()
        versions = list(plan.seat_versions) or [""] * plan.players
        s.add_all(
            MatchSeat(match_id=match_id, seat=seat, bot_id=bot_id, forfeited=False,
                      faults=0, bot_version=versions[seat])
            for seat, bot_id in enumerate(plan.seat_bot_ids)
        )
        s.flush()
        ids.append(match_id)
    return ids


def _check_same(s: Session, m: Match, tournament_id: int | None, plan: MatchPlan) -> None:
    seating = list(s.scalars(
        select(MatchSeat.bot_id).where(MatchSeat.match_id == m.id).order_by(MatchSeat.seat)))
    if (m.tournament_id != tournament_id or m.seed != plan.seed or m.players != plan.players
            or seating != list(plan.seat_bot_ids)):
        raise StorageError(f"match key {plan.key!r} is already scheduled differently")

