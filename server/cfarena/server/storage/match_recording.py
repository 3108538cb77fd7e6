"""Recording a played match: result, seats, faults, seat logs, game log and ratings,
in the one session (transaction) `Database.record_match` opens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cfarena.server.rating.elo import elo_update
from cfarena.server.rating.pairwise import INITIAL_ELO
from cfarena.server.storage import ladder_tallies
from cfarena.server.storage.arena_store import rate_skill
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import canonical_sha256, storable_text, utc_now
from cfarena.server.storage.models import (
    Fault,
    FaultKind,
    GameLog,
    Match,
    MatchSeat,
    MatchStatus,
    Rating,
    RatingHistory,
    SeatLogRow,
)
from cfarena.server.storage.queries import GLOBAL_POOL, aware
from cfarena.server.storage.upsert import insert_or_ignore
from cfarena.server.storage.values import StoredMatch


class LeaseLost(StorageError):
    """A record played under a lease the match no longer holds: another process plays
    (or played) it, or it was aborted while its player was silent past the limit. The
    record is not stored; the copy played under the valid lease is the match's."""


def recorded_status(record: StoredMatch) -> MatchStatus:
    """The record's status: finished or aborted (ValueError for any other)."""
    status = MatchStatus(record.status)
    if status not in (MatchStatus.FINISHED, MatchStatus.ABORTED):
        raise ValueError(f"a match is recorded as finished or aborted, not {status.value}")
    return status


def record_match(s: Session, record: StoredMatch, status: MatchStatus) -> bool:
    """`Database.record_match` in its session `s` (`status` from `recorded_status`)."""
    m = s.get(Match, record.match_id, with_for_update=True)
    if m is None:
        raise StorageError(f"no match {record.match_id!r} (schedule it first)")
    if record.lease is not None and m.lease != record.lease:
        # checked in the transaction that stores, under the match row's lock: whoever
        # revoked or replaced the lease did so in a transaction of its own on this row
        held = "revoked" if m.lease is None else "held by another process"
        raise LeaseLost(f"match {record.match_id}: its lease is {held} (this process was "
                        f"silent past the limit; the match is {m.status} elsewhere): this "
                        "copy is not stored")
    if m.status == MatchStatus.FINISHED.value:
        return False
    finished = status is MatchStatus.FINISHED
    if finished:
        _check_result(record, m.players)
    _check_seat_logs(record, m.players)
    # rows of an earlier (aborted) attempt of this match: this attempt replaces them
    # (its faults, counted in the ladder's tallies, are taken out of them)
    dropped = ladder_tallies.fault_counts(s, m.id) if m.tournament_id is None else {}
    for table in (Fault, SeatLogRow, GameLog):
        s.execute(delete(table).where(table.match_id == m.id))
    now = record.finished_at or utc_now()
    m.status = status.value
    m.reason = None if record.reason is None else storable_text(record.reason)
    m.round_scores = [list(r) for r in record.round_scores] if finished else None
    m.totals = list(record.totals) if finished else None
    m.ranks = list(record.ranks) if finished else None
    m.rounds = len(record.round_scores) if finished else None
    m.finished_at = now
    m.duration_s = record.duration_s
    if m.duration_s is None and m.started_at is not None:
        m.duration_s = (now - aware(m.started_at)).total_seconds()
    s.flush()

    seats = {x.seat: x for x in s.scalars(
        select(MatchSeat).where(MatchSeat.match_id == m.id).order_by(MatchSeat.seat))}
    fault_counts: dict[int, int] = {}
    for f in record.faults:
        fault_counts[f.seat] = fault_counts.get(f.seat, 0) + 1
    for seat, row in seats.items():
        row.total = record.totals[seat] if finished else None
        row.rank = record.ranks[seat] if finished else None
        row.forfeited = seat in record.forfeited
        row.faults = fault_counts.get(seat, 0)
    s.flush()

    faults = [Fault(match_id=m.id, seat=f.seat,
                    bot_id=seats[f.seat].bot_id if f.seat in seats else None,
                    kind=_fault_kind(f.kind), detail=storable_text(f.detail),
                    at_turn=f.turn_id, created_at=now)
              for f in record.faults]
    s.add_all(faults)
    s.flush()
    ladder_tallies.tally_match(s, m, [seats[i] for i in sorted(seats)], finished, dropped,
                               faults, now)

    s.add_all(
        SeatLogRow(match_id=m.id, seat=x.seat, output=storable_text(x.output),
                   output_bytes=x.output_bytes,
                   exit=None if x.exit is None else storable_text(x.exit))
        for x in record.seat_logs
    )
    s.flush()

    if record.log is not None:
        _store_log(s, m.id, record.log, record.log_format)

    if finished:
        ranks = [(seats[i].bot_id, record.ranks[i]) for i in sorted(seats)]
        entrants = [((seats[i].bot_id, seats[i].bot_version), record.ranks[i])
                    for i in sorted(seats)]
        # a tournament's match in its own pool only; a ladder match also in "global"
        pools = (m.pool,) if m.tournament_id is not None else (m.pool, GLOBAL_POOL)
        for pool in dict.fromkeys(pools):
            _rate(s, m.id, pool, ranks, now)
            rate_skill(s, pool, m.id, entrants, now)
    return True


def _fault_kind(kind: FaultKind | str) -> str:
    """The stored kind; a kind given by its value is taken, anything else refused."""
    return FaultKind(kind).value



def _check_result(record: StoredMatch, players: int) -> None:
    if len(record.totals) != players or len(record.ranks) != players:
        raise ValueError(f"match {record.match_id!r}: need totals and ranks for {players} seats")
    if any(r < 1 for r in record.ranks):
        raise ValueError(f"match {record.match_id!r}: ranks start at 1")
    if any(len(r) != players for r in record.round_scores):
        raise ValueError(f"match {record.match_id!r}: a round score row is not {players} long")


def _check_seat_logs(record: StoredMatch, players: int) -> None:
    seen: set[int] = set()
    for x in record.seat_logs:
        if not 0 <= x.seat < players or x.seat in seen:
            raise ValueError(f"match {record.match_id!r}: a seat log for seat {x.seat} "
                             f"(one per seat of {players})")
        if x.output_bytes < 0:
            raise ValueError(f"match {record.match_id!r}: seat {x.seat} printed "
                             f"{x.output_bytes} bytes")
        seen.add(x.seat)



def _store_log(s: Session, match_id: str, log: Mapping[str, Any], fmt: int) -> None:
    document = dict(log)
    s.add(GameLog(match_id=match_id, format=fmt, log=document,
                  sha256=canonical_sha256(document)))
    s.flush()


def _insert_missing_ratings(s: Session, pool: str, bot_ids: Sequence[int], now: datetime) -> None:
    have = set(s.scalars(select(Rating.bot_id).where(Rating.pool == pool,
                                                      Rating.bot_id.in_(bot_ids))))
    rows = [{"bot_id": b, "pool": pool, "elo": INITIAL_ELO, "games": 0, "updated_at": now}
            for b in bot_ids if b not in have]
    # a concurrent writer may insert the same rows first: theirs win, then both lock them
    insert_or_ignore(s, Rating, rows)


def _rate(s: Session, match_id: str, pool: str, ranks: list[tuple[int, int]],
          now: datetime) -> None:
    bot_ids = sorted({b for b, _ in ranks})
    _insert_missing_ratings(s, pool, bot_ids, now)
    rows = {r.bot_id: r for r in s.scalars(
        select(Rating).where(Rating.pool == pool, Rating.bot_id.in_(bot_ids))
        .order_by(Rating.bot_id).with_for_update())}
    after = elo_update({b: r.elo for b, r in rows.items()}, ranks)
    for bot_id in bot_ids:
        row = rows[bot_id]
        s.add(RatingHistory(bot_id=bot_id, pool=pool, match_id=match_id, elo_before=row.elo,
                            elo_after=after[bot_id], created_at=now))
        row.elo, row.games, row.updated_at = after[bot_id], row.games + 1, now
    s.flush()
