"""The competition arena: bot versions per seat, token rotation and revocation,
online (openskill) ratings per (bot, version).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("bots") as batch:
        # a revoked bot's token admits nothing; rotation replaces token_hash
        batch.add_column(sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("token_changed_at", sa.DateTime(timezone=True),
                                   nullable=True))
    with op.batch_alter_table("match_seats") as batch:
        # the version the seat's bot reported in its Hello ("" for none)
        batch.add_column(sa.Column("bot_version", sa.String(64), nullable=False,
                                   server_default=""))
    op.create_table(
        "skill_ratings",
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("bot_id", "version", "pool", name="pk_skill_ratings"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name="fk_skill_ratings_bot_id_bots"),
    )


def downgrade() -> None:
    op.drop_table("skill_ratings")
    # plain ALTER TABLE (SQLite >= 3.35 and PostgreSQL): a batch copy of match_seats
    # would drop the table under the faults and seat logs that reference it
    for table, column in (("match_seats", "bot_version"), ("bots", "token_changed_at"),
                          ("bots", "revoked_at")):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
