"""One bot test per configuration: `sprt_tests.config_hash` becomes unique, so two
`cfarena sprt` of the same test started at once (two terminals, two machines on one
PostgreSQL) create it once and both attach to it (`create_sprt_test`).

Before this revision both could be stored. `find_sprt_test` found the newest of them,
so an older one was never found again: it keeps its rows, and its hash is replaced by
one of its own (the sha256 of the old hash and its id), which no configuration has.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

_tests = sa.table("sprt_tests", sa.column("id", sa.Integer), sa.column("config_hash"))


def upgrade() -> None:
    bind = op.get_bind()
    newest: dict[str, int] = {}
    older: list[tuple[int, str]] = []
    for test_id, digest in bind.execute(
            sa.select(_tests.c.id, _tests.c.config_hash).order_by(_tests.c.id.desc())):
        if digest in newest:
            older.append((test_id, digest))
        else:
            newest[digest] = test_id
    for test_id, digest in older:
        unique = hashlib.sha256(f"{digest}/superseded/{test_id}".encode()).hexdigest()
        bind.execute(sa.update(_tests).where(_tests.c.id == test_id)
                     .values(config_hash=unique))
    op.drop_index("ix_sprt_tests_config_hash", table_name="sprt_tests")
    op.create_index("uq_sprt_tests_config_hash", "sprt_tests", ["config_hash"], unique=True)


def downgrade() -> None:
    # one way: the superseded tests keep the hashes of their own that upgrade gave them
    op.drop_index("uq_sprt_tests_config_hash", table_name="sprt_tests")
    op.create_index("ix_sprt_tests_config_hash", "sprt_tests", ["config_hash"])
