"""The ladder's tallies: per pool (and "global"), each bot's results, each (bot,
version)'s seat positions and each distinct result's count over the matches outside
tournaments, kept up to date by the transaction that records a match
(`storage.ladder_tallies`): the leaderboard reads them instead of the whole history.

A database from before this revision gets them here, once, counted over its matches
as the leaderboard's queries counted them until now: its finished ladder matches'
results, and the faults of its ladder matches of any status.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None

Timestamp = sa.DateTime(timezone=True)
# What the runtime code did when this revision was written, copied, not imported: a
# migration is a snapshot, and a later change to `storage.ladder_tallies` must not
# change what this one counts (a later format gets a migration of its own).
GLOBAL_POOL = "global"  # storage.queries.GLOBAL_POOL


def result_key(result: tuple[tuple[tuple[int, str], int], ...]) -> str:
    """`storage.ladder_tallies.result_key` of 0010: the text a result's tally stores."""
    return json.dumps([[bot_id, version, rank] for (bot_id, version), rank in result],
                      separators=(",", ":"))


def ladder_pools(pool: str) -> tuple[str, ...]:
    """`storage.ladder_tallies.ladder_pools` of 0010: a ladder match counts in its pool
    and in "global"."""
    return tuple(dict.fromkeys((pool, GLOBAL_POOL)))

_matches = sa.table("matches", sa.column("id"), sa.column("tournament_id"), sa.column("pool"),
                    sa.column("status"), sa.column("rounds"), sa.column("finished_at", Timestamp))
_seats = sa.table("match_seats", sa.column("match_id"), sa.column("seat"),
                  sa.column("bot_id"), sa.column("bot_version"), sa.column("total"),
                  sa.column("rank"), sa.column("forfeited"))
_faults = sa.table("faults", sa.column("id"), sa.column("match_id"), sa.column("bot_id"))


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # an arena of the previous version still running on this database stores its
        # matches with no tallies: wait for its stores in flight and hold the next ones
        # off until the counts below are committed (on SQLite the migration's
        # BEGIN IMMEDIATE already does). Arenas on one database run one version:
        # ARENA.md says to stop the older ones first.
        op.execute("LOCK TABLE matches, match_seats, faults IN SHARE MODE")
    bots = op.create_table(
        "ladder_bot_tallies",
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("points", sa.BigInteger(), nullable=False),
        sa.Column("rounds", sa.BigInteger(), nullable=False),
        sa.Column("forfeits", sa.Integer(), nullable=False),
        sa.Column("faults", sa.Integer(), nullable=False),
        sa.Column("last_fault_id", sa.Integer(), nullable=True),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.PrimaryKeyConstraint("pool", "bot_id", name="pk_ladder_bot_tallies"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"],
                                name="fk_ladder_bot_tallies_bot_id_bots"),
    )
    seats = op.create_table(
        "ladder_seat_tallies",
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("pool", "bot_id", "version", "seat",
                                name="pk_ladder_seat_tallies"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"],
                                name="fk_ladder_seat_tallies_bot_id_bots"),
    )
    results = op.create_table(
        "ladder_result_tallies",
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("first_finished_at", Timestamp, nullable=False),
        sa.Column("first_match_id", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("pool", "result", name="pk_ladder_result_tallies"),
    )
    assert bots is not None and seats is not None and results is not None
    _backfill(bots, seats, results)


def _backfill(bots: sa.Table, seats: sa.Table, results: sa.Table) -> None:
    """Count the ladder's matches stored so far: finished ones in finishing order (a
    result's first match is the first it meets), then every ladder match's faults."""
    bind = op.get_bind()
    per_bot: dict[tuple[str, int], dict[str, Any]] = {}
    per_seat: dict[tuple[str, int, str, int], int] = {}
    per_result: dict[tuple[str, str], dict[str, Any]] = {}

    def tally(pool: str, bot_id: int) -> dict[str, Any]:
        return per_bot.setdefault((pool, bot_id), {
            "pool": pool, "bot_id": bot_id, "matches": 0, "wins": 0, "points": 0,
            "rounds": 0, "forfeits": 0, "faults": 0, "last_fault_id": None,
            "finished_at": None})

    rows = bind.execute(
        sa.select(_matches.c.id, _matches.c.pool, _matches.c.rounds, _matches.c.finished_at,
                  _seats.c.seat, _seats.c.bot_id, _seats.c.bot_version, _seats.c.total,
                  _seats.c.rank, _seats.c.forfeited)
        .join(_seats, _seats.c.match_id == _matches.c.id)
        .where(_matches.c.status == "finished", _matches.c.tournament_id.is_(None))
        .order_by(_matches.c.finished_at, _matches.c.id, _seats.c.seat))
    matches: dict[str, tuple[str, int, datetime, list[Any]]] = {}
    for match_id, pool, rounds, finished_at, *seat in rows:
        matches.setdefault(match_id, (pool, rounds or 0, finished_at, []))[3].append(seat)
    for match_id, (pool, rounds, finished_at, seated) in matches.items():
        key = result_key(tuple(((bot_id, version), int(rank or 0))
                               for _seat, bot_id, version, _total, rank, _f in seated))
        for counted in ladder_pools(pool):
            for bot_id in dict.fromkeys(bot_id for _s, bot_id, *_rest in seated):
                row = tally(counted, bot_id)
                row["matches"] += 1
                row["wins"] += any(b == bot_id and rank == 1
                                   for _s, b, _v, _t, rank, _f in seated)
                row["finished_at"] = finished_at  # in finishing order: the latest stays
            for seat, bot_id, version, total, _rank, forfeited in seated:
                row = tally(counted, bot_id)
                row["points"] += total or 0
                row["rounds"] += rounds
                row["forfeits"] += int(bool(forfeited))
                place = (counted, bot_id, version, seat)
                per_seat[place] = per_seat.get(place, 0) + 1
            first = per_result.setdefault((counted, key), {
                "pool": counted, "result": key, "matches": 0,
                "first_finished_at": finished_at, "first_match_id": match_id})
            first["matches"] += 1
    for fault_id, bot_id, pool in bind.execute(
            sa.select(_faults.c.id, _faults.c.bot_id, _matches.c.pool)
            .join(_matches, _matches.c.id == _faults.c.match_id)
            .where(_matches.c.tournament_id.is_(None), _faults.c.bot_id.is_not(None))
            .order_by(_faults.c.id)):
        for counted in ladder_pools(pool):
            row = tally(counted, bot_id)
            row["faults"] += 1
            row["last_fault_id"] = fault_id
    if per_bot:
        op.bulk_insert(bots, list(per_bot.values()))
    if per_seat:
        op.bulk_insert(seats, [{"pool": pool, "bot_id": bot_id, "version": version,
                                "seat": seat, "matches": n}
                               for (pool, bot_id, version, seat), n in per_seat.items()])
    if per_result:
        op.bulk_insert(results, list(per_result.values()))


def downgrade() -> None:
    op.drop_table("ladder_result_tallies")
    op.drop_table("ladder_seat_tallies")
    op.drop_table("ladder_bot_tallies")
