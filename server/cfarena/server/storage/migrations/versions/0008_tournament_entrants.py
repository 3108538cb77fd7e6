"""Tournament entrants are their own records: a bot is a ladder bot (`bots add`, it dials
in to `serve`) or one tournament's entrant (`bots.tournament_id`), and a tournament's
matches are rated in the tournament's own pool ("tournament/ID") only, never in the
ladder's pools nor in "global".

Until now a tournament registered its bots by name among the ladder's: a bot named like
a ladder bot had its token replaced and its command overwritten, and the tournament's
matches were rated into the ladder's pools. A database from before this revision is
sorted out here, once, from the matches each bot sat in:

- A bot stays a ladder bot when it played a match outside tournaments, played no match
  at all (registered and never seated), or had its token rotated or revoked (only
  `cfarena bots` does that). Every tournament it played in gets an entrant of the same
  name and command (a new record), and that tournament's seats and faults move to it.
  So a name used by both keeps the ladder bot (its id, token, ladder matches and
  ladder ratings) and gains one entrant per tournament. Its command stays the last one
  written (a tournament's, if one overwrote it): what was overwritten is not stored.
- Any other bot played in tournaments only: it becomes the entrant of the first of them
  (same id), and each further tournament gets an entrant of its own.
- Tournament matches move to their tournament's pool, and every stored rating (Elo and
  online, current and after each match) is rebuilt by replaying the finished matches in
  finishing order: the ladder's pools and "global" over the matches outside tournaments,
  each tournament's pool over its own. A ladder bot's ratings therefore lose what
  tournaments had added. The replay uses `cfarena.server.rating` as it is when this
  revision runs.

On SQLite the bots table is copied (its unique name becomes unique per scope), which
`connect.migrate` does with foreign keys off. Downgrading merges nothing back: it is
refused while two bots share a name.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from alembic import op

from cfarena.server.rating.elo import elo_update
from cfarena.server.rating.online import Skill, rate_entrants
from cfarena.server.rating.pairwise import INITIAL_ELO

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

GLOBAL_POOL = "global"  # storage.queries.GLOBAL_POOL
_LADDER_ONLY = "tournament_id IS NULL"

_bots = sa.table("bots", sa.column("id", sa.Integer), sa.column("name"),
                 sa.column("token_hash"), sa.column("command"), sa.column("created_at"),
                 sa.column("revoked_at"), sa.column("token_changed_at"),
                 sa.column("tournament_id", sa.Integer))
_matches = sa.table("matches", sa.column("id"), sa.column("tournament_id", sa.Integer),
                    sa.column("pool"), sa.column("status"), sa.column("finished_at"))
_seats = sa.table("match_seats", sa.column("match_id"), sa.column("seat"),
                  sa.column("bot_id", sa.Integer), sa.column("bot_version"),
                  sa.column("rank"))
_faults = sa.table("faults", sa.column("match_id"), sa.column("bot_id", sa.Integer))
_ratings = sa.table("ratings", sa.column("bot_id"), sa.column("pool"), sa.column("elo"),
                    sa.column("games"), sa.column("updated_at"))
_rating_history = sa.table("rating_history", sa.column("bot_id"), sa.column("pool"),
                           sa.column("match_id"), sa.column("elo_before"),
                           sa.column("elo_after"), sa.column("created_at"))
_skill_ratings = sa.table("skill_ratings", sa.column("bot_id"), sa.column("version"),
                          sa.column("pool"), sa.column("mu"), sa.column("sigma"),
                          sa.column("games"), sa.column("updated_at"))
_skill_history = sa.table("skill_history", sa.column("match_id"), sa.column("bot_id"),
                          sa.column("version"), sa.column("pool"), sa.column("mu"),
                          sa.column("sigma"))


def tournament_pool(tournament_id: int) -> str:
    """storage.scheduling.tournament_pool as of this revision."""
    return f"tournament/{tournament_id}"


def upgrade() -> None:
    with op.batch_alter_table("bots", recreate="auto") as batch:
        batch.add_column(sa.Column("tournament_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_bots_tournament_id_tournaments", "tournaments",
                                 ["tournament_id"], ["id"], ondelete="CASCADE")
        batch.drop_constraint("uq_bots_name", type_="unique")
    conn = op.get_bind()
    _split_entrants(conn)
    op.create_index("uq_bots_ladder_name", "bots", ["name"], unique=True,
                    sqlite_where=sa.text(_LADDER_ONLY), postgresql_where=sa.text(_LADDER_ONLY))
    op.create_index("uq_bots_tournament_name", "bots", ["tournament_id", "name"], unique=True)
    for (tournament_id,) in conn.execute(sa.select(_matches.c.tournament_id).distinct()
                                         .where(_matches.c.tournament_id.is_not(None))):
        conn.execute(_matches.update().where(_matches.c.tournament_id == tournament_id)
                     .values(pool=tournament_pool(tournament_id)))
    _rebuild_ratings(conn)


def _split_entrants(conn: sa.Connection) -> None:
    """Give every (bot, tournament it played in) its entrant (see the module docstring)."""
    played: dict[int, set[int | None]] = defaultdict(set)
    for bot_id, tournament_id in conn.execute(
            sa.select(_seats.c.bot_id, _matches.c.tournament_id).distinct()
            .join(_matches, _matches.c.id == _seats.c.match_id)):
        played[bot_id].add(tournament_id)
    for bot in conn.execute(sa.select(_bots).order_by(_bots.c.id)).mappings().all():
        tournaments = sorted(t for t in played.get(bot["id"], ()) if t is not None)
        if not tournaments:
            continue  # a ladder bot that never played a tournament
        ladder = (None in played[bot["id"]] or bot["revoked_at"] is not None
                  or bot["token_changed_at"] is not None)
        if not ladder:  # the bot is its first tournament's entrant
            first, *tournaments = tournaments
            conn.execute(_bots.update().where(_bots.c.id == bot["id"])
                         .values(tournament_id=first))
        for tournament_id in tournaments:
            entrant = conn.execute(_bots.insert().values(
                name=bot["name"], token_hash=secrets.token_hex(32), command=bot["command"],
                created_at=bot["created_at"], tournament_id=tournament_id)
                .returning(_bots.c.id)).scalar_one()
            in_tournament = sa.select(_matches.c.id).where(
                _matches.c.tournament_id == tournament_id).scalar_subquery()
            for table in (_seats, _faults):
                conn.execute(table.update().where(table.c.bot_id == bot["id"],
                                                  table.c.match_id.in_(in_tournament))
                             .values(bot_id=entrant))


def _rebuild_ratings(conn: sa.Connection) -> None:
    """Replay both ratings over the finished matches, in finishing order: a match outside
    tournaments in its pool and "global", a tournament's match in its pool only."""
    for table in (_rating_history, _ratings, _skill_history, _skill_ratings):
        conn.execute(table.delete())
    rows = conn.execute(
        sa.select(_matches.c.id, _matches.c.pool, _matches.c.tournament_id,
                  _matches.c.finished_at, _seats.c.bot_id, _seats.c.bot_version,
                  _seats.c.rank)
        .join(_seats, _seats.c.match_id == _matches.c.id)
        .where(_matches.c.status == "finished")
        .order_by(_matches.c.finished_at, _matches.c.id, _seats.c.seat))
    matches: dict[str, tuple[tuple[str, ...], Any, list[tuple[tuple[int, str], int]]]] = {}
    for match_id, pool, tournament_id, finished_at, bot_id, version, rank in rows:
        pools = (pool,) if tournament_id is not None else tuple(dict.fromkeys((pool,
                                                                              GLOBAL_POOL)))
        matches.setdefault(match_id, (pools, finished_at, []))[2].append(
            ((bot_id, version), int(rank or 0)))
    elo: dict[tuple[int, str], list[Any]] = {}  # (bot, pool) -> [elo, games, updated]
    skills: dict[tuple[tuple[int, str], str], tuple[Skill, Any]] = {}
    elo_points: list[dict[str, Any]] = []
    skill_points: list[dict[str, Any]] = []
    for match_id, (pools, finished_at, seats) in matches.items():
        ranks = [(bot_id, rank) for (bot_id, _version), rank in seats]
        for pool in pools:
            current = {b: elo.get((b, pool), [INITIAL_ELO])[0] for b, _ in ranks}
            for bot_id, after in elo_update(current, ranks).items():
                games = elo.get((bot_id, pool), [INITIAL_ELO, 0])[1]
                elo[(bot_id, pool)] = [after, games + 1, finished_at]
                elo_points.append({"bot_id": bot_id, "pool": pool, "match_id": match_id,
                                   "elo_before": current[bot_id], "elo_after": after,
                                   "created_at": finished_at})
            before = {e: skills.get((e, pool), (Skill(), None))[0] for e, _ in seats}
            for entrant, skill in rate_entrants(before, seats).items():
                skills[(entrant, pool)] = (skill, finished_at)
                skill_points.append({"match_id": match_id, "bot_id": entrant[0],
                                     "version": entrant[1], "pool": pool, "mu": skill.mu,
                                     "sigma": skill.sigma})
    inserts = (
        (_ratings, [{"bot_id": b, "pool": p, "elo": e, "games": g, "updated_at": at}
                    for (b, p), (e, g, at) in elo.items()]),
        (_rating_history, elo_points),
        (_skill_ratings, [{"bot_id": b, "version": v, "pool": p, "mu": s.mu,
                           "sigma": s.sigma, "games": s.games, "updated_at": at}
                          for ((b, v), p), (s, at) in skills.items()]),
        (_skill_history, skill_points),
    )
    for table, values in inserts:
        if values:
            conn.execute(table.insert(), values)


def downgrade() -> None:
    conn = op.get_bind()
    shared = conn.execute(sa.select(_bots.c.name).group_by(_bots.c.name)
                          .having(sa.func.count() > 1)).scalars().first()
    if shared is not None:
        raise RuntimeError(f"cannot downgrade below 0008: several bots are named {shared!r} "
                           "(entrants of several tournaments, or a ladder bot and an "
                           "entrant), and before 0008 a name was one bot's")
    op.drop_index("uq_bots_tournament_name", table_name="bots")
    op.drop_index("uq_bots_ladder_name", table_name="bots")
    with op.batch_alter_table("bots", recreate="auto") as batch:
        batch.drop_constraint("fk_bots_tournament_id_tournaments", type_="foreignkey")
        batch.drop_column("tournament_id")
        batch.create_unique_constraint("uq_bots_name", ["name"])
