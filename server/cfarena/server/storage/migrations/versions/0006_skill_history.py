"""The online rating of each (bot, version) after each finished match, per pool: what
a bot page's chart draws, stored with the rating's update instead of replayed over the
pool's history on every read.

A database from before this revision gets its history here, once: the online rating
replayed over each pool's finished matches in finishing order (what the chart showed
until now). That replay uses `cfarena.server.rating.online` as it is when this revision runs.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from cfarena.server.rating.online import Skill, rate_entrants

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

GLOBAL_POOL = "global"  # every match is also rated in it (storage.queries.GLOBAL_POOL)

_matches = sa.table("matches", sa.column("id"), sa.column("pool"), sa.column("status"),
                    sa.column("finished_at"))
_seats = sa.table("match_seats", sa.column("match_id"), sa.column("seat"),
                  sa.column("bot_id"), sa.column("bot_version"), sa.column("rank"))


def upgrade() -> None:
    history = op.create_table(
        "skill_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_skill_history"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name="fk_skill_history_bot_id_bots"),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"],
                                name="fk_skill_history_match_id_matches", ondelete="CASCADE"),
        sa.UniqueConstraint("match_id", "bot_id", "version", "pool",
                            name="uq_skill_history_match_id"),
    )
    op.create_index("ix_skill_history_bot_pool", "skill_history", ["bot_id", "pool"])
    assert history is not None
    _backfill(history)


def _backfill(history: sa.Table) -> None:
    """Replay the online rating over each pool's finished matches (and over all of them,
    the global pool), in finishing order, writing each entrant's rating after each."""
    rows = op.get_bind().execute(
        sa.select(_matches.c.id, _matches.c.pool, _seats.c.bot_id, _seats.c.bot_version,
                  _seats.c.rank)
        .join(_seats, _seats.c.match_id == _matches.c.id)
        .where(_matches.c.status == "finished")
        .order_by(_matches.c.finished_at, _matches.c.id, _seats.c.seat))
    matches: dict[str, tuple[str, list[tuple[tuple[int, str], int]]]] = {}
    for match_id, pool, bot_id, version, rank in rows:
        matches.setdefault(match_id, (pool, []))[1].append(((bot_id, version), int(rank or 0)))
    skills: dict[str, dict[tuple[int, str], Skill]] = {}
    points: list[dict[str, object]] = []
    for match_id, (pool, seats) in matches.items():
        for rated in dict.fromkeys((pool, GLOBAL_POOL)):
            known = skills.setdefault(rated, {})
            after = rate_entrants({e: known.get(e, Skill()) for e, _rank in seats}, seats)
            known.update(after)
            points.extend({"match_id": match_id, "bot_id": bot_id, "version": version,
                           "pool": rated, "mu": skill.mu, "sigma": skill.sigma}
                          for (bot_id, version), skill in after.items())
    if points:
        op.bulk_insert(history, points)


def downgrade() -> None:
    op.drop_index("ix_skill_history_bot_pool", table_name="skill_history")
    op.drop_table("skill_history")
