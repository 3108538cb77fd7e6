"""Bot tests (`cfarena sprt`): a row per test, linked to the tournament whose matches it
plays, and a row per counted deal group (its score and the LLR after it).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sprt_tests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("new_bot", sa.String(200), nullable=False),
        sa.Column("old_bot", sa.String(200), nullable=False),
        sa.Column("config", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("groups", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("llr", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_sprt_tests"),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"],
                                name="fk_sprt_tests_tournament_id_tournaments",
                                ondelete="CASCADE"),
        sa.UniqueConstraint("tournament_id", name="uq_sprt_tests_tournament_id"),
        sa.CheckConstraint("verdict IN ('continue', 'H1', 'H0', 'inconclusive')",
                           name="ck_sprt_tests_verdict"),
    )
    op.create_index("ix_sprt_tests_config_hash", "sprt_tests", ["config_hash"])
    op.create_table(
        "sprt_groups",
        sa.Column("test_id", sa.Integer(), nullable=False),
        sa.Column("group_number", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("llr", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("test_id", "group_number", name="pk_sprt_groups"),
        sa.ForeignKeyConstraint(["test_id"], ["sprt_tests.id"],
                                name="fk_sprt_groups_test_id_sprt_tests", ondelete="CASCADE"),
    )


def downgrade() -> None:
    op.drop_table("sprt_groups")
    op.drop_index("ix_sprt_tests_config_hash", table_name="sprt_tests")
    op.drop_table("sprt_tests")
