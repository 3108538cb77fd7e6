"""Read queries behind the facade: rows to frozen records, standings, match lists."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, select, tuple_
from sqlalchemy.orm import Session

from cfarena.server.rating.elo import elo_update
from cfarena.server.rating.pairwise import INITIAL_ELO
from cfarena.server.storage.models import (
    Bot,
    Fault,
    FaultKind,
    GameLog,
    LadderBotTally,
    Match,
    MatchSeat,
    MatchStatus,
    Rating,
    RatingHistory,
    SeatLogRow,
    Tournament,
    TournamentStatus,
)
from cfarena.server.storage.values import (
    BotInfo,
    FaultInfo,
    MatchDetail,
    MatchInfo,
    RatingPoint,
    ScheduledMatch,
    SeatInfo,
    SeatLog,
    Standing,
    TournamentInfo,
)

GLOBAL_POOL = "global"
_FINISHED = MatchStatus.FINISHED.value


def aware(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _maybe(value: datetime | None) -> datetime | None:
    return None if value is None else aware(value)


def bot_info(b: Bot) -> BotInfo:
    return BotInfo(id=b.id, name=b.name, token_hash=b.token_hash, command=b.command,
                   created_at=aware(b.created_at), revoked_at=_maybe(b.revoked_at),
                   token_changed_at=_maybe(b.token_changed_at),
                   tournament_id=b.tournament_id)


def tournament_info(t: Tournament) -> TournamentInfo:
    return TournamentInfo(id=t.id, name=t.name, config=t.config, config_hash=t.config_hash,
                          status=TournamentStatus(t.status), created_at=aware(t.created_at),
                          finished_at=_maybe(t.finished_at))


def bot_id_of(s: Session, bot: str | int, tournament_id: int | None = None) -> int | None:
    """Bot `bot` (an id, or a name: tournament `tournament_id`'s entrant of that name, or
    without one the ladder bot's)."""
    if isinstance(bot, int):
        return bot
    scope = (Bot.tournament_id.is_(None) if tournament_id is None
             else Bot.tournament_id == tournament_id)
    return s.scalar(select(Bot.id).where(Bot.name == bot, scope))


def _filters(tournament_id: int | None, pool: str | None) -> list[Any]:
    where: list[Any] = []
    if tournament_id is not None:
        where.append(Match.tournament_id == tournament_id)
    if pool is not None and pool != GLOBAL_POOL:
        where.append(Match.pool == pool)
    return where


def _table_filters(tournament_id: int | None, pool: str | None) -> list[Any]:
    """The matches of one table: a tournament's, or (None) the ladder's, outside every
    tournament (tournaments' entrants are never the ladder's bots); in `pool` if given."""
    ladder = [Match.tournament_id.is_(None)] if tournament_id is None else []
    return [*_filters(tournament_id, pool), *ladder]


def scheduled(s: Session, tournament_id: int, statuses: Sequence[str],
              match_id: str | None = None) -> list[ScheduledMatch]:
    query = select(Match).where(Match.tournament_id == tournament_id,
                                Match.status.in_(statuses))
    if match_id is not None:
        query = query.where(Match.id == match_id)
    matches = list(s.scalars(query.order_by(Match.ordinal)))
    seats = _seat_bots(s, [m.id for m in matches])
    return [ScheduledMatch(id=m.id, key=m.key, seed=m.seed, rules=m.rules, players=m.players,
                           pool=m.pool, seat_bot_ids=tuple(seats.get(m.id, ())),
                           status=MatchStatus(m.status)) for m in matches]


def _seat_bots(s: Session, match_ids: Sequence[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if not match_ids:
        return out
    rows = s.execute(select(MatchSeat.match_id, MatchSeat.bot_id)
                     .where(MatchSeat.match_id.in_(match_ids))
                     .order_by(MatchSeat.match_id, MatchSeat.seat))
    for match_id, bot_id in rows:
        out.setdefault(match_id, []).append(bot_id)
    return out


def results(s: Session, tournament_id: int | None, pool: str | None
            ) -> list[list[tuple[int, int]]]:
    return [ranks for _, ranks in deal_results(s, tournament_id, pool)]


def deal_results(s: Session, tournament_id: int | None, pool: str | None
                 ) -> list[tuple[int, list[tuple[int, int]]]]:
    """(deal seed, (bot id, rank) per seat) of every finished match, in finishing order."""
    rows = s.execute(
        select(Match.id, Match.seed, MatchSeat.bot_id, MatchSeat.rank)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(Match.status == _FINISHED, *_table_filters(tournament_id, pool))
        .order_by(Match.finished_at, Match.id, MatchSeat.seat))
    out: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    for match_id, seed, bot_id, rank in rows:
        out.setdefault(match_id, (int(seed), []))[1].append(
            (bot_id, rank if rank is not None else 0))
    return list(out.values())


def standings(s: Session, tournament_id: int | None, pool: str | None) -> list[Standing]:
    """A tournament's table (its ratings replayed over its own matches), or (None) the
    ladder's in `pool` (its stored ratings, rated outside tournaments only, and its
    tallies: `ladder_tallies`, not its whole history)."""
    elo_by_bot: dict[int, float] = {}
    if tournament_id is None:
        stats, faults = _ladder_stats(s, pool or GLOBAL_POOL)
        elo_by_bot = dict(s.execute(
            select(Rating.bot_id, Rating.elo).where(Rating.pool == (pool or GLOBAL_POOL))
        ).all())
    else:
        stats, faults = _history_stats(s, _table_filters(tournament_id, pool))
        for match in results(s, tournament_id, pool):
            elo_by_bot.update(elo_update(elo_by_bot, match))
    bot_ids = set(stats) | set(faults) | set(elo_by_bot)
    names = dict(s.execute(select(Bot.id, Bot.name).where(Bot.id.in_(bot_ids))).all())
    table: list[Standing] = []
    for bot_id in bot_ids:
        matches, wins, points, rounds, forfeits = stats.get(bot_id, (0, 0, None, None, 0))
        table.append(Standing(
            bot_id=bot_id, name=names[bot_id], elo=elo_by_bot.get(bot_id, INITIAL_ELO),
            matches=int(matches), wins=int(wins),
            mean_score=float(points) / float(rounds) if rounds else None,
            faults=faults.get(bot_id, 0), forfeits=int(forfeits or 0)))
    table.sort(key=lambda x: (-x.elo, x.name))
    return table


# bot id -> (finished matches, of them won, sum of its seats' totals, of its seats'
# matches' rounds, forfeited seats); bot id -> faults in matches of any status
_Stats = tuple[dict[int, tuple[Any, ...]], dict[int, int]]


def _ladder_stats(s: Session, pool: str) -> _Stats:
    """`_Stats` of the ladder in `pool` ("global": all of it), from its tallies."""
    stats: dict[int, tuple[Any, ...]] = {}
    faults: dict[int, int] = {}
    for row in s.scalars(select(LadderBotTally).where(LadderBotTally.pool == pool)):
        if row.matches:
            stats[row.bot_id] = (row.matches, row.wins, row.points, row.rounds, row.forfeits)
        if row.faults:
            faults[row.bot_id] = row.faults
    return stats, faults


def _history_stats(s: Session, where: Sequence[Any]) -> _Stats:
    """`_Stats` over the matches `where` selects (a tournament's), from their rows."""
    won = case((MatchSeat.rank == 1, MatchSeat.match_id), else_=None)
    forfeit = case((MatchSeat.forfeited.is_(True), 1), else_=0)
    stats = {
        row[0]: row[1:]
        for row in s.execute(
            select(MatchSeat.bot_id, func.count(func.distinct(MatchSeat.match_id)),
                   func.count(func.distinct(won)), func.sum(MatchSeat.total),
                   func.sum(Match.rounds), func.sum(forfeit))
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.status == _FINISHED, *where)
            .group_by(MatchSeat.bot_id))
    }
    faults: dict[int, int] = {
        bot_id: n for bot_id, n in s.execute(
            select(Fault.bot_id, func.count()).join(Match, Match.id == Fault.match_id)
            .where(*where).group_by(Fault.bot_id))
    }
    return stats, faults


def _seat_infos(s: Session, match_ids: Sequence[str]) -> dict[str, tuple[SeatInfo, ...]]:
    out: dict[str, list[SeatInfo]] = {}
    if not match_ids:
        return {}
    rows = s.execute(select(MatchSeat, Bot.name).join(Bot, Bot.id == MatchSeat.bot_id)
                     .where(MatchSeat.match_id.in_(match_ids))
                     .order_by(MatchSeat.match_id, MatchSeat.seat))
    for seat, name in rows:
        out.setdefault(seat.match_id, []).append(SeatInfo(
            seat=seat.seat, bot_id=seat.bot_id, bot_name=name, total=seat.total, rank=seat.rank,
            forfeited=seat.forfeited, faults=seat.faults))
    return {k: tuple(v) for k, v in out.items()}


def _match_info(m: Match, seats: tuple[SeatInfo, ...]) -> MatchInfo:
    return MatchInfo(id=m.id, tournament_id=m.tournament_id, key=m.key, pool=m.pool, seed=m.seed,
                     players=m.players, status=MatchStatus(m.status), reason=m.reason,
                     created_at=aware(m.created_at), started_at=_maybe(m.started_at),
                     finished_at=_maybe(m.finished_at), duration_s=m.duration_s, seats=seats)


def list_matches(s: Session, tournament_id: int | None, bot: str | int | None,
                 status: MatchStatus | None, limit: int | None) -> list[MatchInfo]:
    query = select(Match).where(*_filters(tournament_id, None))
    if bot is not None:
        bot_id = bot_id_of(s, bot, tournament_id)
        if bot_id is None:
            return []
        query = query.where(Match.id.in_(
            select(MatchSeat.match_id).where(MatchSeat.bot_id == bot_id)))
    if status is not None:
        query = query.where(Match.status == status.value)
    # newest first by the time shown (when it started; if it has not, when it was
    # scheduled: a tournament schedules all its matches at once), ties broken stably
    started = func.coalesce(Match.started_at, Match.created_at)
    query = query.order_by(started.desc(), Match.created_at.desc(), Match.ordinal.desc(),
                           Match.id.desc())
    if limit is not None:
        query = query.limit(limit)
    matches = list(s.scalars(query))
    seats = _seat_infos(s, [m.id for m in matches])
    return [_match_info(m, seats.get(m.id, ())) for m in matches]


def logged_matches_after(s: Session, bot_id: int, after: str | None, limit: int
                         ) -> list[MatchInfo] | None:
    """Bot `bot_id`'s matches with a stored game log in the order they ended (then by
    id), those after its match `after` (None: from the first), at most `limit`; None if
    `after` is not one of its matches. By their end, not their start: a match in play
    when a page is read sorts after it once it ends, so paging on later finds it. (A
    record stored late, after a storage outage, keeps the time it ended and may sort
    before a page already read; a match played again after an abort moves to its new
    end.)"""
    order = (func.coalesce(Match.finished_at, Match.created_at), Match.id)
    own = Match.id.in_(select(MatchSeat.match_id).where(MatchSeat.bot_id == bot_id))
    query = select(Match).join(GameLog, GameLog.match_id == Match.id).where(own)
    if after is not None:
        cursor = s.execute(select(*order).where(own, Match.id == after)).first()
        if cursor is None:
            return None
        query = query.where(tuple_(*order) > tuple(cursor))
    matches = list(s.scalars(query.order_by(*order).limit(limit)))
    seats = _seat_infos(s, [m.id for m in matches])
    return [_match_info(m, seats.get(m.id, ())) for m in matches]


def match_detail(s: Session, match_id: str) -> MatchDetail | None:
    m = s.get(Match, match_id)
    if m is None:
        return None
    faults = tuple(
        FaultInfo(id=f.id, match_id=f.match_id, seat=f.seat, bot_id=f.bot_id, bot_name=name,
                  kind=FaultKind(f.kind), detail=f.detail, turn_id=f.at_turn,
                  created_at=aware(f.created_at))
        for f, name in s.execute(select(Fault, Bot.name).join(Bot, Bot.id == Fault.bot_id)
                                 .where(Fault.match_id == match_id).order_by(Fault.id)))
    log = s.execute(select(GameLog.sha256, GameLog.format)
                    .where(GameLog.match_id == match_id)).one_or_none()
    return MatchDetail(match=_match_info(m, _seat_infos(s, [m.id]).get(m.id, ())),
                       rules=m.rules, round_scores=m.round_scores, faults=faults,
                       log_sha256=None if log is None else log[0],
                       log_format=None if log is None else log[1])


def seat_logs(s: Session, match_id: str) -> list[SeatLog]:
    rows = s.scalars(select(SeatLogRow).where(SeatLogRow.match_id == match_id)
                     .order_by(SeatLogRow.seat))
    return [SeatLog(seat=r.seat, output=r.output, output_bytes=r.output_bytes, exit=r.exit)
            for r in rows]


def rating_history(s: Session, bot: str | int, pool: str) -> list[RatingPoint]:
    bot_id = bot_id_of(s, bot)
    if bot_id is None:
        return []
    rows = s.scalars(select(RatingHistory)
                     .where(RatingHistory.bot_id == bot_id, RatingHistory.pool == pool)
                     .order_by(RatingHistory.id))
    return [RatingPoint(match_id=r.match_id, pool=r.pool, elo_before=r.elo_before,
                        elo_after=r.elo_after, created_at=aware(r.created_at)) for r in rows]
