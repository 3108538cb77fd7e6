"""Seat logs (each bot process's captured output) and the "limit" fault kind.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-14
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_KINDS_0001 = "kind IN ('timeout', 'illegal', 'protocol', 'disconnect')"
_KINDS_0002 = "kind IN ('timeout', 'illegal', 'protocol', 'disconnect', 'limit')"


# The name 0001 gave the check: its "ck_faults_kind" went through the models'
# naming convention (ck_<table>_<name>) once more. op.f() uses it as it is.
_KIND_CHECK = "ck_faults_ck_faults_kind"


def _faults_kinds(check: str) -> None:
    # SQLite cannot alter a constraint: batch mode copies the table (rows, indexes,
    # foreign keys and the other constraints kept); PostgreSQL alters it in place.
    with op.batch_alter_table("faults") as batch:
        batch.drop_constraint(op.f(_KIND_CHECK), type_="check")
        batch.create_check_constraint(op.f(_KIND_CHECK), check)


def upgrade() -> None:
    op.create_table(
        "seat_logs",
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("output_bytes", sa.BigInteger(), nullable=False),
        sa.Column("exit", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("match_id", "seat", name="pk_seat_logs"),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name="fk_seat_logs_match_id_matches", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["match_id", "seat"],
            ["match_seats.match_id", "match_seats.seat"],
            name="fk_seat_logs_match_seat",
            ondelete="CASCADE",
        ),
    )
    _faults_kinds(_KINDS_0002)


def downgrade() -> None:
    # 0001 knows no "limit" faults: they become disconnects (the sandbox killed the
    # process), keeping their detail and the seats' fault counts.
    op.execute("UPDATE faults SET kind = 'disconnect' WHERE kind = 'limit'")
    _faults_kinds(_KINDS_0001)
    op.drop_table("seat_logs")
