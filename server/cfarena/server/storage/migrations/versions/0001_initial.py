"""Initial schema: bots, tournaments, matches, seats, faults, logs, ratings.

Revision ID: 0001
Revises:
Create Date: 2025-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_JSON = sa.JSON(none_as_null=True)
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("command", sa.Text(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_bots"),
        sa.UniqueConstraint("name", name="uq_bots_name"),
        sa.UniqueConstraint("token_hash", name="uq_bots_token_hash"),
    )
    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("config", _JSON, nullable=False),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("finished_at", _TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tournaments"),
        sa.CheckConstraint(
            "status IN ('running', 'finished', 'interrupted')", name="ck_tournaments_status"
        ),
    )
    op.create_index("ix_tournaments_config_hash", "tournaments", ["config_hash"])
    op.create_table(
        "matches",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=True),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("rules", _JSON, nullable=False),
        sa.Column("players", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("round_scores", _JSON, nullable=True),
        sa.Column("totals", _JSON, nullable=True),
        sa.Column("ranks", _JSON, nullable=True),
        sa.Column("rounds", sa.Integer(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("started_at", _TS, nullable=True),
        sa.Column("finished_at", _TS, nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_matches"),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name="fk_matches_tournament_id_tournaments",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("tournament_id", "key", name="uq_matches_tournament_id"),
        sa.CheckConstraint(
            "status IN ('scheduled', 'running', 'finished', 'aborted')", name="ck_matches_status"
        ),
    )
    op.create_index("ix_matches_tournament_status", "matches", ["tournament_id", "status"])
    op.create_table(
        "match_seats",
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=True),
        sa.Column("rank", sa.Integer(), nullable=True),
        sa.Column("forfeited", sa.Boolean(), nullable=False),
        sa.Column("faults", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("match_id", "seat", name="pk_match_seats"),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name="fk_match_seats_match_id_matches", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name="fk_match_seats_bot_id_bots"),
    )
    op.create_index("ix_match_seats_bot_id", "match_seats", ["bot_id"])
    op.create_table(
        "faults",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("at_turn", sa.Integer(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_faults"),
        sa.ForeignKeyConstraint(
            ["match_id", "seat"],
            ["match_seats.match_id", "match_seats.seat"],
            name="fk_faults_match_seat",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name="fk_faults_bot_id_bots"),
        sa.CheckConstraint(
            "kind IN ('timeout', 'illegal', 'protocol', 'disconnect')", name="ck_faults_kind"
        ),
    )
    op.create_index("ix_faults_match_id", "faults", ["match_id"])
    op.create_index("ix_faults_bot_id", "faults", ["bot_id"])
    op.create_table(
        "game_logs",
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("format", sa.Integer(), nullable=False),
        sa.Column("log", _JSON, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("match_id", name="pk_game_logs"),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name="fk_game_logs_match_id_matches", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "ratings",
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("elo", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("bot_id", "pool", name="pk_ratings"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name="fk_ratings_bot_id_bots"),
    )
    op.create_table(
        "rating_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(100), nullable=False),
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("elo_before", sa.Float(), nullable=False),
        sa.Column("elo_after", sa.Float(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rating_history"),
        sa.ForeignKeyConstraint(
            ["bot_id"], ["bots.id"], name="fk_rating_history_bot_id_bots"
        ),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name="fk_rating_history_match_id_matches",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("match_id", "bot_id", "pool", name="uq_rating_history_match_id"),
    )
    op.create_index("ix_rating_history_bot_pool", "rating_history", ["bot_id", "pool"])


def downgrade() -> None:
    for table in (
        "rating_history",
        "ratings",
        "game_logs",
        "faults",
        "match_seats",
        "matches",
        "tournaments",
        "bots",
    ):
        op.drop_table(table)
