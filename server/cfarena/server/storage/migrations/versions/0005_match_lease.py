"""The lease (fencing token) of a match in play: issued by `mark_running` to the
process that plays it, revoked when the match is taken from that process (aborted by
another arena, its job put back in the queue); a record is stored only under the lease
it was played with.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # a plain ADD COLUMN, as in 0004
    op.add_column("matches", sa.Column("lease", sa.String(32), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE matches DROP COLUMN lease")
