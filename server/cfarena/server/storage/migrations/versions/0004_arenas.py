"""Several arena processes on one database: the live arenas (identity, heartbeat) and
the arena that runs each match outside a tournament.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "arenas",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("address", sa.String(200), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_arenas"),
    )
    # the arena (`arenas.id`) that scheduled and plays a match outside a tournament; no
    # foreign key: an arena's row may be cleaned up while its matches stay. A plain
    # ADD COLUMN (no batch copy of matches, which the seats and logs reference)
    op.add_column("matches", sa.Column("arena_id", sa.String(64), nullable=True))
    op.create_index("ix_matches_arena_status", "matches", ["arena_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_matches_arena_status", table_name="matches")
    # plain ALTER TABLE (SQLite >= 3.35 and PostgreSQL), as in 0003
    op.execute("ALTER TABLE matches DROP COLUMN arena_id")
    op.drop_table("arenas")
