"""Several `cfarena serve` processes on one database (a store of `Database`).

Each arena has a row in `arenas` (a random id, the address its bots dial) that it
beats on every poll. Matches outside tournaments carry the id of the arena that
scheduled them. With that:

- an arena whose beat is older than the stale limit is dead: any live arena marks
  its scheduled and running matches aborted (the reason names the dead arena), once,
  and revokes their leases: an arena that was only frozen stores nothing of them when
  it wakes (`record_match` refuses a record whose lease is gone), and its next beat
  tells it which matches it lost; their deals are never played again (the arenas draw
  fresh seeds); and its row says stopped, at its last heartbeat (if it was only
  frozen, its next beat makes the row live again);
- a bot's capacity holds across the arenas: scheduling a match locks the seated
  bots' rows (`SELECT ... FOR NO KEY UPDATE`; SQLite's writers are serialised by
  BEGIN IMMEDIATE anyway), counts their unfinished matches on every arena and
  refuses the table if one of them has no slot left, in the transaction that
  stores the match;
- a clean stop marks the arena stopped (its matches are stored by then).

Times are the database server's (PostgreSQL `now()`), so arenas on machines whose
clocks disagree agree on who is stale; on SQLite (one machine) the local clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from cfarena.server.storage import scheduling
from cfarena.server.storage.encoding import storable_text, utc_now
from cfarena.server.storage.models import ArenaRow, Bot, Match, MatchSeat, MatchStatus
from cfarena.server.storage.queries import aware
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.upsert import dialect_insert
from cfarena.server.storage.values import MatchPlan

_OPEN = (MatchStatus.SCHEDULED.value, MatchStatus.RUNNING.value)


@dataclass(frozen=True, slots=True)
class ArenaBeat:
    """What one heartbeat (or an arena's start) found: the matches of silent arenas it
    marked aborted as died (`died`), those it marked aborted as stopped (`aborted`:
    at the start only), the unfinished matches per bot id on the other arenas, and the
    beating arena's own matches whose lease it lost (`lost`: it was taken for dead)."""

    aborted: tuple[str, ...] = ()
    busy_elsewhere: Mapping[int, int] = field(default_factory=dict)
    died: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()


def died_reason(arena_id: str, address: str | None, stale_s: float) -> str:
    """The reason stored with a match whose arena another arena declared dead."""
    where = f" ({address})" if address else ""
    return f"arena {arena_id}{where} died (no heartbeat for {stale_s:g} s)"


def _db_now(s: Session) -> datetime:
    if s.get_bind().dialect.name == "postgresql":
        now = s.scalar(select(func.now()))
        assert isinstance(now, datetime)
        return aware(now)
    return utc_now()


class FleetStore(Sessions):
    """The calls of `Database` for several arenas on one database (see the module
    docstring)."""

    def arena_started(self, arena_id: str, host: str, address: str, stale_s: float,
                      stopped_reason: str) -> ArenaBeat:
        """Register arena `arena_id` (on machine `host`, listening on `address`) as live,
        and mark aborted the unfinished matches outside tournaments that no live arena
        runs. With `stopped_reason`: those of the arenas that listened on this address
        of this machine (this one holds the port now: they are gone, a referee killed
        and started again) and untagged ones (a referee from before arenas had ids);
        as died (`died_reason`): those of arenas silent for `stale_s`. `aborted` lists
        the first, `died` the second."""
        with self._session(write=True) as s:
            now = _db_now(s)
            _upsert(s, arena_id, now, host=host[:200], address=address[:200])
            before = list(s.scalars(select(ArenaRow.id).where(
                ArenaRow.id != arena_id, ArenaRow.host == host[:200],
                ArenaRow.address == address[:200])))
            s.execute(update(ArenaRow).where(ArenaRow.id.in_(before), ArenaRow.stopped_at.is_(None))
                      .values(stopped_at=now))
            gone = list(s.scalars(select(Match.id).where(
                Match.tournament_id.is_(None), Match.status.in_(_OPEN),
                Match.arena_id.is_(None) | Match.arena_id.in_(before))
                .order_by(Match.id).with_for_update()))
            if gone:
                s.execute(update(Match).where(Match.id.in_(gone), Match.status.in_(_OPEN))
                          .values(status=MatchStatus.ABORTED.value,
                                  reason=storable_text(stopped_reason), finished_at=now,
                                  lease=None))
            return ArenaBeat(tuple(gone), died=tuple(_reap(s, arena_id, now, stale_s)))

    def arena_beat(self, arena_id: str, stale_s: float,
                   leases: Mapping[str, str] | None = None) -> ArenaBeat:
        """Arena `arena_id` is alive: its heartbeat is now. Marks aborted the unfinished
        matches of arenas not heard of for `stale_s` seconds, and counts each bot's
        unfinished matches on the other arenas. `leases` (match id -> lease) are those
        of the matches the arena plays: `lost` lists the ones whose lease is no longer
        theirs (the arena was silent past the stale limit, and another one aborted
        them)."""
        with self._session(write=True) as s:
            now = _db_now(s)
            _upsert(s, arena_id, now)
            lost: list[str] = []
            if leases:
                held = {str(i): lease for i, lease in s.execute(
                    select(Match.id, Match.lease).where(Match.id.in_(list(leases))))}
                lost = sorted(k for k, lease in leases.items() if held.get(k) != lease)
            died = _reap(s, arena_id, now, stale_s)
            rows = s.execute(
                select(MatchSeat.bot_id, func.count(MatchSeat.match_id.distinct()))
                .join(Match, Match.id == MatchSeat.match_id)
                .where(Match.tournament_id.is_(None), Match.status.in_(_OPEN),
                       Match.arena_id != arena_id)
                .group_by(MatchSeat.bot_id))
            return ArenaBeat(busy_elsewhere={int(b): int(n) for b, n in rows}, died=tuple(died),
                             lost=tuple(lost))

    def arena_stopped(self, arena_id: str) -> None:
        """Arena `arena_id` stopped cleanly (its matches are stored)."""
        with self._session(write=True) as s:
            now = _db_now(s)
            s.execute(update(ArenaRow).where(ArenaRow.id == arena_id).values(stopped_at=now))

    def live_arenas(self, stale_s: float) -> list[tuple[str, str]]:
        """(id, address) of the arenas heard of within `stale_s` seconds and not stopped."""
        with self._session() as s:
            cutoff = _db_now(s) - timedelta(seconds=stale_s)
            return [(a.id, a.address) for a in s.scalars(select(ArenaRow).order_by(ArenaRow.id))
                    if a.stopped_at is None and aware(a.heartbeat_at) >= cutoff]

    def schedule_seated(self, plan: MatchPlan, arena_id: str,
                        capacity: Mapping[int, int]) -> dict[int, int] | None:
        """Schedule a match outside tournaments for arena `arena_id` if each seated bot
        (id) has a free slot across all arenas: its unfinished matches plus its seats
        here at most `capacity[bot id]`. None when scheduled; else nothing is written
        and the unfinished matches per seated bot are returned."""
        scheduling.check_plan(plan)
        seats = Counter(plan.seat_bot_ids)
        ids = sorted(seats)
        with self._session(write=True) as s:
            # one scheduler at a time per bot, across arenas (NO KEY: the seats, faults
            # and ratings rows that reference the bot do not wait for it)
            s.execute(select(Bot.id).where(Bot.id.in_(ids)).order_by(Bot.id)
                      .with_for_update(key_share=True)).all()
            open_counts = {int(b): int(n) for b, n in s.execute(
                select(MatchSeat.bot_id, func.count(MatchSeat.match_id.distinct()))
                .join(Match, Match.id == MatchSeat.match_id)
                .where(Match.tournament_id.is_(None), Match.status.in_(_OPEN),
                       MatchSeat.bot_id.in_(ids))
                .group_by(MatchSeat.bot_id))}
            if any(open_counts.get(b, 0) + seats[b] > capacity.get(b, 0) for b in ids):
                return {b: open_counts.get(b, 0) for b in ids}
            (match_id,) = scheduling.schedule_matches(s, None, [plan])
            s.execute(update(Match).where(Match.id == match_id).values(arena_id=arena_id))
            return None


def _upsert(s: Session, arena_id: str, now: datetime, host: str | None = None,
            address: str | None = None) -> None:
    """Arena `arena_id` beats now (and runs on `host`, listening on `address`, if
    given): its row is inserted or updated in one statement (its poll may race its
    start)."""
    values = {"id": arena_id, "host": host or "", "address": address or "",
              "started_at": now, "heartbeat_at": now, "stopped_at": None}
    changed: dict[str, Any] = {"heartbeat_at": now, "stopped_at": None}
    if host is not None and address is not None:
        changed.update(host=host, address=address, started_at=now)
    statement = dialect_insert(s, ArenaRow).values(values)
    s.execute(statement.on_conflict_do_update(index_elements=[ArenaRow.id], set_=changed))


def _reap(s: Session, arena_id: str, now: datetime, stale_s: float) -> list[str]:
    """Mark aborted the unfinished matches of the arenas other than `arena_id` that are
    stale, stopped or gone (no row); their ids. Only the arenas that have unfinished
    matches are looked at (the rows of old arenas pile up, one per start)."""
    cutoff = now - timedelta(seconds=stale_s)
    _mark_silent(s, arena_id, cutoff)
    holding = set(s.scalars(select(Match.arena_id).where(
        Match.tournament_id.is_(None), Match.status.in_(_OPEN), Match.arena_id.is_not(None),
        Match.arena_id != arena_id).distinct()))
    if not holding:
        return []
    rows = {a.id: a for a in s.scalars(select(ArenaRow).where(ArenaRow.id.in_(holding)))}
    aborted: list[str] = []
    for dead_id in sorted(a for a in holding if a is not None):
        row = rows.get(dead_id)
        if row is not None and row.stopped_at is None and aware(row.heartbeat_at) >= cutoff:
            continue  # alive
        reason = died_reason(dead_id, row.address if row is not None else None, stale_s)
        aborted.extend(_abort_open(s, dead_id, reason, now))
    return aborted


def _mark_silent(s: Session, arena_id: str, cutoff: datetime) -> None:
    """The rows of the arenas other than `arena_id` not heard of since `cutoff` (killed,
    frozen, their machine gone) say they stopped, at their last heartbeat. Only if that
    heartbeat is still the one read: an arena that beat meanwhile stays live."""
    silent = [(a.id, a.heartbeat_at) for a in s.scalars(select(ArenaRow).where(
        ArenaRow.id != arena_id, ArenaRow.stopped_at.is_(None))) if aware(a.heartbeat_at) < cutoff]
    for silent_id, last_beat in silent:
        s.execute(update(ArenaRow).where(ArenaRow.id == silent_id, ArenaRow.stopped_at.is_(None),
                                      ArenaRow.heartbeat_at == last_beat)
                  .values(stopped_at=last_beat))


def _abort_open(s: Session, arena_id: str, reason: str, now: datetime) -> Sequence[str]:
    # locked first: a match its arena is recording right now (the row lock of
    # record_match) is left to it, and read again after
    ids = list(s.scalars(select(Match.id).where(
        Match.arena_id == arena_id, Match.tournament_id.is_(None), Match.status.in_(_OPEN))
        .order_by(Match.id).with_for_update()))
    if ids:
        s.execute(update(Match).where(Match.id.in_(ids), Match.status.in_(_OPEN))
                  .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                          finished_at=now, lease=None))
    return ids
