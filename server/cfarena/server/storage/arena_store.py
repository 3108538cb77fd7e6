"""The competition arena's storage calls (a store of `Database`): the online
(openskill) rating per (bot, version), seat positions for the ladder, what may be
shown of a match, and what a bot's owner may see (versions, faults, decision times)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cfarena.server.rating.online import INITIAL_MU, INITIAL_SIGMA, Skill, rate_entrants
from cfarena.server.storage.bot_store import bot_named
from cfarena.server.storage.ladder_tallies import (
    Entrant,
    LadderResult,
    parse_result_key,
    unfinished_ladder,
)
from cfarena.server.storage.models import (
    Bot,
    Fault,
    FaultKind,
    GameLog,
    LadderBotTally,
    LadderResultTally,
    LadderSeatTally,
    Match,
    MatchSeat,
    MatchStatus,
    SkillHistory,
    SkillRating,
)
from cfarena.server.storage.queries import GLOBAL_POOL, aware
from cfarena.server.storage.sessions import Sessions, one_snapshot
from cfarena.server.storage.upsert import insert_or_ignore
from cfarena.server.storage.values import FaultInfo, SkillStanding

# when a seat's bot was last seen in its match: its end, or its start while it plays
# (a scheduled match never started: when it was scheduled)
_SEEN_AT = func.coalesce(Match.finished_at, Match.started_at, Match.created_at)
LOGS_AT_ONCE = 1  # game logs decoded at a time (`decision_times`)
_IN_PLAY = (MatchStatus.SCHEDULED, MatchStatus.RUNNING)
_UNFINISHED = (*_IN_PLAY, MatchStatus.ABORTED)


@dataclass(frozen=True, slots=True)
class LadderActivity:
    """A bot in the ladder's matches (those outside tournaments): when it was last seen
    in one (`seen_at`, as `VersionHistory.last_at`) and its latest fault there."""

    seen_at: datetime | None
    fault: FaultInfo | None


@dataclass(frozen=True, slots=True)
class VersionHistory:
    """One version of a bot as the database saw it: its matches (any status), when
    the first of them started (or was scheduled, if none started) and when the bot
    was last seen in one (the end of its latest match, the start of one it plays)."""

    version: str
    matches: int
    first_at: datetime
    last_at: datetime


class ArenaStore(Sessions):
    """The competition arena's calls of `Database` (see the module docstring)."""

    # -- online ratings ---------------------------------------------------------

    def skill_standings(self, pool: str, *, tournaments: bool = False) -> list[SkillStanding]:
        """Every ladder bot's (bot, version) rated in `pool` (a tournament's entrants
        never: a `tournament/N` pool has none), best conservative score first, with its
        seat-position counts over the matches outside tournaments of that pool
        (`tournaments=True`: over all of them)."""
        with self._session() as s:
            seats = _seat_counts(s, pool, tournaments)
            rows = s.execute(
                select(SkillRating, Bot.name).join(Bot, Bot.id == SkillRating.bot_id)
                .where(SkillRating.pool == pool, Bot.tournament_id.is_(None)))
            out: list[SkillStanding] = []
            seen: set[Entrant] = set()
            for rating, name in rows:
                key = (rating.bot_id, rating.version)
                seen.add(key)
                out.append(_standing(key, name, Skill(rating.mu, rating.sigma, rating.games),
                                     aware(rating.updated_at), seats.get(key, ())))
            # entrants that played (or play) but have no finished match yet
            names = {i: n for i, n in s.execute(
                select(Bot.id, Bot.name).where(Bot.tournament_id.is_(None)))}
            for key, counts in seats.items():
                if key not in seen and key[0] in names:
                    out.append(_standing(key, names[key[0]], Skill(), None, counts))
            out.sort(key=lambda x: (-x.conservative, x.name, x.version))
            return out

    def results_by_version(self, pool: str) -> list[tuple[LadderResult, int]]:
        """The distinct results of the finished ladder matches (outside tournaments)
        of `pool`, each with how many matches ended so: ((bot id, version), rank) per
        seat, in seat order; in the order each was first seen (by finishing time,
        then id). What the batch Bradley-Terry check is fitted on (`fit_ratings`'
        `counts`). Read from their tallies (`ladder_tallies`): as many rows as
        distinct results (entrants, seatings, ranks), not as matches played."""
        with self._session() as s:
            rows = s.execute(
                select(LadderResultTally.result, LadderResultTally.matches)
                .where(LadderResultTally.pool == pool)
                .order_by(LadderResultTally.first_finished_at,
                          LadderResultTally.first_match_id))
            return [(parse_result_key(key), int(n)) for key, n in rows]

    def skill_history(self, name: str, pool: str, last: int | None = None
                      ) -> list[tuple[int, str, Skill]]:
        """(number, version, online rating) of ladder bot `name` in `pool` after each
        of its rated matches, oldest first, numbered from 1 (its first rated match);
        with `last`, only the latest `last` of them ([] if there is no such bot)."""
        with self._session() as s:
            query = (select(SkillHistory.version, SkillHistory.mu, SkillHistory.sigma)
                     .join(Bot, Bot.id == SkillHistory.bot_id)
                     .where(Bot.name == name, Bot.tournament_id.is_(None),
                            SkillHistory.pool == pool))
            skipped = 0
            if last is not None:
                total = s.scalar(select(func.count()).select_from(query.subquery())) or 0
                skipped = max(total - last, 0)
            rows = s.execute(query.order_by(SkillHistory.id).offset(skipped))
            return [(skipped + i, version, Skill(mu, sigma))
                    for i, (version, mu, sigma) in enumerate(rows, 1)]

    # -- what may be shown of a match (the web page) -----------------------------

    def same_deal(self, match_id: str) -> list[tuple[str, int | None, MatchStatus, bool]]:
        """(id, tournament id, status, whether its game log is stored) of every stored
        match dealt with the same seed as `match_id` (itself included; [] if there is
        no such match): a duplicate tournament plays one deal in several rotations, and
        the deal of one may be shown only once all of them are over."""
        with self._session() as s:
            seed = select(Match.seed).where(Match.id == match_id).scalar_subquery()
            rows = s.execute(select(Match.id, Match.tournament_id, Match.status,
                                    GameLog.match_id.is_not(None))
                             .outerjoin(GameLog, GameLog.match_id == Match.id)
                             .where(Match.seed == seed))
            return [(i, t, MatchStatus(st), bool(logged)) for i, t, st, logged in rows]

    def finished_count(self, pool: str) -> int:
        """Finished ladder matches (outside tournaments) of `pool` ("global": all):
        the sum of its result tallies (`ladder_tallies`), not a count of the history."""
        with self._session() as s:
            return int(s.scalar(select(func.sum(LadderResultTally.matches))
                                .where(LadderResultTally.pool == pool)) or 0)

    # -- what a bot's owner sees ------------------------------------------------

    def bot_versions(self, name: str) -> list[VersionHistory]:
        """The versions bot `name` played with, oldest first."""
        with self._session() as s:
            bot = bot_named(s, name)
            rows = s.execute(
                select(MatchSeat.bot_version, func.count(),
                       func.min(func.coalesce(Match.started_at, Match.created_at)),
                       func.max(_SEEN_AT))
                .join(Match, Match.id == MatchSeat.match_id)
                .where(MatchSeat.bot_id == bot.id)
                .group_by(MatchSeat.bot_version))
            history = [VersionHistory(v, n, aware(a), aware(b)) for v, n, a, b in rows]
            history.sort(key=lambda h: (h.first_at, h.version))
            return history

    def ladder_activity(self) -> dict[str, LadderActivity]:
        """Bot name -> when it was last seen in a match outside tournaments and its
        latest fault in one (every bot that played one): its finished matches'
        from the ladder's tallies, the others' (few: to play, in play, aborted) read."""
        with self._session() as s:
            # the unfinished first, then the tallies: a match that finishes in between
            # (PostgreSQL reads each statement at its own moment) is then seen twice,
            # which a latest time does not mind, not missed
            unfinished = s.execute(
                select(MatchSeat.bot_id, func.max(_SEEN_AT))
                .join(Match, Match.id == MatchSeat.match_id)
                .where(*unfinished_ladder(_UNFINISHED)).group_by(MatchSeat.bot_id)).all()
            seen: dict[int, datetime] = {}
            tallied = s.execute(
                select(LadderBotTally.bot_id, LadderBotTally.finished_at,
                       LadderBotTally.last_fault_id)
                .where(LadderBotTally.pool == GLOBAL_POOL))
            latest: dict[int, int] = {}
            for bot_id, finished_at, fault_id in tallied:
                if finished_at is not None:
                    seen[bot_id] = aware(finished_at)
                if fault_id is not None:
                    latest[bot_id] = fault_id
            for bot_id, at in unfinished:
                if at is not None and (bot_id not in seen or aware(at) > seen[bot_id]):
                    seen[bot_id] = aware(at)
            names = dict(s.execute(select(Bot.id, Bot.name).where(Bot.id.in_(seen))).all())
            wanted = [latest[b] for b in seen if b in latest]
            faults = {f.bot_id: FaultInfo(id=f.id, match_id=f.match_id, seat=f.seat,
                                          bot_id=f.bot_id, bot_name=names[f.bot_id],
                                          kind=FaultKind(f.kind), detail=f.detail,
                                          turn_id=f.at_turn, created_at=aware(f.created_at))
                      for f in s.scalars(select(Fault).where(Fault.id.in_(wanted)))}
            return {names[b]: LadderActivity(at, faults.get(b)) for b, at in seen.items()}

    def bot_faults(self, name: str, limit: int = 20) -> list[FaultInfo]:
        """Bot `name`'s latest faults, newest first, with their exact details."""
        with self._session() as s:
            bot = bot_named(s, name)
            rows = s.scalars(select(Fault).where(Fault.bot_id == bot.id)
                             .order_by(Fault.created_at.desc(), Fault.id.desc()).limit(limit))
            return [FaultInfo(id=f.id, match_id=f.match_id, seat=f.seat, bot_id=f.bot_id,
                              bot_name=bot.name, kind=FaultKind(f.kind), detail=f.detail,
                              turn_id=f.at_turn, created_at=aware(f.created_at))
                    for f in rows]

    def decision_times(self, name: str, matches: int = 200) -> dict[str, list[float]]:
        """Per version, bot `name`'s answer times in ms (as the referee measured them,
        from the stored game logs of its latest `matches` finished matches that have one).

        Only each log's actions are read, one log at a time: decoding whole logs, all
        of them at once, took ~0.4 MB per full-length match, and the web's threads
        kept that peak (their allocator's), which grew with every match played. And
        only the logs of those matches: the latest are chosen first (by finishing time,
        from the bot's seats and the matches' rows), and their logs read after. Taking
        the actions out of the logs in the same query as the sort by time took them
        out of every one of the bot's logs (SQLite did; 70 ms a page at 2,400 matches
        a bot, and a sort's memory that grew with them)."""
        with self._session() as s:
            bot = bot_named(s, name)
            latest = (select(Match.id)
                      .join(GameLog, GameLog.match_id == Match.id)
                      .where(Match.id.in_(select(MatchSeat.match_id)
                                          .where(MatchSeat.bot_id == bot.id)),
                             Match.status == MatchStatus.FINISHED.value)
                      .order_by(Match.finished_at.desc(), Match.id.desc()).limit(matches))
            rows = s.execute(
                select(MatchSeat.seat, MatchSeat.bot_version, GameLog.log["actions"])
                .join(GameLog, GameLog.match_id == MatchSeat.match_id)
                .where(MatchSeat.bot_id == bot.id, MatchSeat.match_id.in_(latest))
                .execution_options(yield_per=LOGS_AT_ONCE))
            times: dict[str, list[float]] = {}
            for seat, version, actions in rows:
                got = times.setdefault(version, [])
                for action in actions or ():
                    ms = action.get("ms")
                    if action.get("seat") == seat and ms is not None:
                        got.append(float(ms))
            return times


def _standing(key: Entrant, name: str, skill: Skill, updated_at: datetime | None,
              seats: Sequence[int]) -> SkillStanding:
    return SkillStanding(bot_id=key[0], name=name, version=key[1], mu=skill.mu,
                         sigma=skill.sigma, conservative=skill.conservative, elo=skill.elo,
                         games=skill.games, updated_at=updated_at, seats=tuple(seats))


def _seat_counts(s: Session, pool: str, tournaments: bool) -> dict[Entrant, list[int]]:
    """(bot id, version) -> matches played (or playing) per seat position in `pool`:
    over the ladder's (outside tournaments), its finished matches' from their tallies
    and those to play or in play read; `tournaments`: over all matches, read."""
    counted = (MatchSeat.bot_id, MatchSeat.bot_version, MatchSeat.seat)
    if tournaments:
        query = (select(*counted, func.count()).join(Match, Match.id == MatchSeat.match_id)
                 .where(Match.status != MatchStatus.ABORTED.value).group_by(*counted))
        if pool != GLOBAL_POOL:
            query = query.where(Match.pool == pool)
        parts = [s.execute(query).all()]
    else:
        # the tallies and the matches in play at one moment (a match finishing between
        # the two reads would be in neither, or in both)
        one_snapshot(s)
        parts = [
            s.execute(select(LadderSeatTally.bot_id, LadderSeatTally.version,
                             LadderSeatTally.seat, LadderSeatTally.matches)
                      .where(LadderSeatTally.pool == pool)).all(),
            s.execute(select(*counted, func.count()).join(Match, Match.id == MatchSeat.match_id)
                      .where(*unfinished_ladder(_IN_PLAY, pool)).group_by(*counted)).all()]
    out: dict[Entrant, list[int]] = {}
    for bot_id, version, seat, n in itertools.chain.from_iterable(parts):
        counts = out.setdefault((bot_id, version), [])
        counts.extend([0] * (seat + 1 - len(counts)))
        counts[seat] += n
    return out


def rate_skill(s: Session, pool: str, match_id: str, seats: Sequence[tuple[Entrant, int]],
               now: datetime) -> None:
    """Update the online rating of every (bot, version) of finished match `match_id` in
    `pool` from its seats' ranks, and keep each new rating in its history (inside the
    match's recording transaction)."""
    entrants = sorted({e for e, _ in seats})
    rows = [{"bot_id": b, "version": v, "pool": pool, "mu": INITIAL_MU, "sigma": INITIAL_SIGMA,
             "games": 0, "updated_at": now} for b, v in entrants]
    # a concurrent writer may insert the same rows first: theirs win, then both lock them
    insert_or_ignore(s, SkillRating, rows)
    found = s.scalars(
        select(SkillRating).where(SkillRating.pool == pool,
                                  SkillRating.bot_id.in_({b for b, _ in entrants}))
        .order_by(SkillRating.bot_id, SkillRating.version).with_for_update())
    current = {(r.bot_id, r.version): r for r in found}
    before = {e: Skill(current[e].mu, current[e].sigma, current[e].games) for e in entrants}
    for entrant, skill in rate_entrants(before, seats).items():
        row = current[entrant]
        row.mu, row.sigma, row.games, row.updated_at = skill.mu, skill.sigma, skill.games, now
        s.add(SkillHistory(match_id=match_id, bot_id=entrant[0], version=entrant[1], pool=pool,
                           mu=skill.mu, sigma=skill.sigma))
    s.flush()
