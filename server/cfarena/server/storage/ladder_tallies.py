"""The ladder's tallies (0010): per pool, each bot's results, each (bot, version)'s
seat positions and each distinct result's count over the matches outside tournaments,
kept up to date by the transaction that records a match (`tally_match`), so that the
leaderboard reads O(bots + distinct results) rows instead of the whole history.

Every ladder match counts in its own pool and in "global" (as its ratings do). Only
a record that is actually stored is tallied (`match_recording.record_match` refuses
a finished match recorded again and a record under a lost lease before it gets
here); the tallies add, so two writers on PostgreSQL add up (`upsert_adding`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select, tuple_, update
from sqlalchemy.orm import Session

from cfarena.server.storage.models import (
    Fault,
    LadderBotTally,
    LadderResultTally,
    LadderSeatTally,
    Match,
    MatchSeat,
    MatchStatus,
)
from cfarena.server.storage.queries import GLOBAL_POOL
from cfarena.server.storage.upsert import dialect_insert, upsert_adding

BOT_COUNTS = ("matches", "wins", "points", "rounds", "forfeits", "faults")
BOT_LATEST = ("last_fault_id", "finished_at")

Entrant = tuple[int, str]  # (bot id, version)
# a ladder match's result: ((bot id, version), rank) per seat, in seat order
LadderResult = tuple[tuple[Entrant, int], ...]


def result_key(result: LadderResult) -> str:
    """The text `LadderResultTally.result` stores for `result` (compact JSON)."""
    return json.dumps([[bot_id, version, rank] for (bot_id, version), rank in result],
                      separators=(",", ":"))


def parse_result_key(key: str) -> LadderResult:
    """The result `result_key` wrote as `key`."""
    return tuple(((int(bot_id), str(version)), int(rank))
                 for bot_id, version, rank in json.loads(key))


def ladder_pools(pool: str) -> tuple[str, ...]:
    """The pools a ladder match of `pool` counts in: its own and "global" (every ladder
    match counts in it, as its ratings do)."""
    return tuple(dict.fromkeys((pool, GLOBAL_POOL)))


def fault_counts(s: Session, match_id: str) -> dict[int, int]:
    """Bot id -> its faults stored for match `match_id` (an earlier attempt's, about
    to be replaced: `tally_match`'s `dropped`)."""
    return {bot_id: int(n) for bot_id, n in s.execute(
        select(Fault.bot_id, func.count()).where(Fault.match_id == match_id)
        .group_by(Fault.bot_id)) if bot_id is not None}


def tally_match(s: Session, m: Match, seats: Sequence[MatchSeat], finished: bool,
                dropped: Mapping[int, int], added: Sequence[Fault], now: datetime) -> None:
    """Count ladder match `m`, just recorded (finished, or aborted), in the tallies of
    its pools: its seats' results if `finished`, its faults (`added`, flushed) less an
    earlier attempt's it replaced (`dropped`: bot id -> faults). A tournament's match
    is not the ladder's: nothing to count."""
    if m.tournament_id is not None:
        return
    per_bot: dict[int, dict[str, Any]] = {}

    def tally(bot_id: int) -> dict[str, Any]:
        return per_bot.setdefault(bot_id, {
            "bot_id": bot_id, "matches": 0, "wins": 0, "points": 0, "rounds": 0,
            "forfeits": 0, "faults": 0, "last_fault_id": None, "finished_at": None})

    if finished:
        for seat in seats:
            row = tally(seat.bot_id)
            row["matches"] = 1
            row["wins"] = max(row["wins"], int(seat.rank == 1))
            row["points"] += seat.total or 0
            row["rounds"] += m.rounds or 0
            row["forfeits"] += int(seat.forfeited)
            row["finished_at"] = now
    for bot_id, n in dropped.items():
        tally(bot_id)["faults"] -= n
    for fault in added:
        if fault.bot_id is not None:
            row = tally(fault.bot_id)
            row["faults"] += 1
            row["last_fault_id"] = max(row["last_fault_id"] or 0, fault.id)
    pools = ladder_pools(m.pool)
    upsert_adding(s, LadderBotTally, [{"pool": pool, **per_bot[b]}
                                      for pool in sorted(pools) for b in sorted(per_bot)],
                  [LadderBotTally.pool, LadderBotTally.bot_id], BOT_COUNTS, BOT_LATEST)
    if dropped:
        _recount_latest_faults(s, pools, sorted(dropped))
    if not finished:
        return
    upsert_adding(s, LadderSeatTally, sorted(
        ({"pool": pool, "bot_id": x.bot_id, "version": x.bot_version, "seat": x.seat,
          "matches": 1} for pool in pools for x in seats),
        key=lambda r: (r["pool"], r["bot_id"], r["version"], r["seat"])),
        [LadderSeatTally.pool, LadderSeatTally.bot_id, LadderSeatTally.version,
         LadderSeatTally.seat], ("matches",))
    key = result_key(tuple(((x.bot_id, x.bot_version), int(x.rank or 0)) for x in seats))
    _count_result(s, [{"pool": pool, "result": key, "matches": 1, "first_finished_at": now,
                       "first_match_id": m.id} for pool in sorted(pools)])


def _count_result(s: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Add one match to each result row's count, the first match of it kept: the one
    that finished first (then the lower id), as the whole history ordered them."""
    statement = dialect_insert(s, LadderResultTally).values(list(rows))
    stored, new = LadderResultTally.__table__.c, statement.excluded
    earlier = tuple_(new.first_finished_at, new.first_match_id) < tuple_(
        stored.first_finished_at, stored.first_match_id)
    s.execute(statement.on_conflict_do_update(
        index_elements=[LadderResultTally.pool, LadderResultTally.result],
        set_={"matches": stored.matches + new.matches,
              "first_finished_at": case((earlier, new.first_finished_at),
                                        else_=stored.first_finished_at),
              "first_match_id": case((earlier, new.first_match_id),
                                     else_=stored.first_match_id)}))


def _recount_latest_faults(s: Session, pools: Sequence[str], bot_ids: Sequence[int]) -> None:
    """The latest fault of bots `bot_ids` in `pools` read again from the faults (some
    of theirs were replaced: the rare re-recording of an aborted match)."""
    for pool in pools:
        in_pool = [] if pool == GLOBAL_POOL else [Match.pool == pool]
        latest = (select(func.max(Fault.id)).join(Match, Match.id == Fault.match_id)
                  .where(Fault.bot_id == LadderBotTally.bot_id,
                         Match.tournament_id.is_(None), *in_pool).scalar_subquery())
        s.execute(update(LadderBotTally)
                  .where(LadderBotTally.pool == pool, LadderBotTally.bot_id.in_(bot_ids))
                  .values(last_fault_id=latest))


def unfinished_ladder(statuses: Sequence[MatchStatus], pool: str | None = None) -> list[Any]:
    """Filters of the ladder's matches with one of `statuses` (not finished: in play,
    to play, or aborted: few, each an arena's stop or a failure), in `pool` if given
    and not "global": read live beside the tallies (the index on tournament and status
    finds them without reading the history)."""
    where: list[Any] = [Match.tournament_id.is_(None),
                        Match.status.in_([x.value for x in statuses])]
    if pool is not None and pool != GLOBAL_POOL:
        where.append(Match.pool == pool)
    return where
