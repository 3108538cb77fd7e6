"""Inserts a concurrent writer may race: the dialect's INSERT … ON CONFLICT.

The two supported databases (SQLite, PostgreSQL; `connect` refuses others) spell
the statement alike, each in its own SQLAlchemy dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import InstrumentedAttribute, Session

from cfarena.server.storage.models import Base


def dialect_insert(s: Session, table: type[Base]) -> postgresql.Insert | sqlite.Insert:
    """An INSERT into `table` in the session's dialect (it has the ON CONFLICT clauses)."""
    if s.get_bind().dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def insert_or_ignore(s: Session, table: type[Base], rows: Sequence[Mapping[str, Any]],
                     conflict: Sequence[InstrumentedAttribute[Any]] | None = None) -> int:
    """Insert `rows` into `table`, skipping each that conflicts with a row already
    there (a concurrent writer's rows win): on the unique columns `conflict` only,
    or on any. How many rows were inserted."""
    if not rows:
        return 0
    statement = dialect_insert(s, table).values(list(rows)).on_conflict_do_nothing(
        index_elements=conflict).returning(*inspect(table).primary_key)
    return len(s.execute(statement).all())


def upsert_adding(s: Session, table: type[Base], rows: Sequence[Mapping[str, Any]],
                  conflict: Sequence[InstrumentedAttribute[Any]], added: Sequence[str],
                  latest: Sequence[str] = ()) -> None:
    """Insert `rows` into `table`; where a row with the same unique columns `conflict`
    is there already (an earlier writer's, or a concurrent one's: it waits for that
    one's transaction), add each of this row's `added` columns to it and keep the
    greater of the two values of each of its `latest` columns (NULL for neither).
    Rows in one order, e.g. sorted by `conflict`: two writers then lock them alike."""
    if not rows:
        return
    statement = dialect_insert(s, table).values(list(rows))
    stored = inspect(table).columns
    greatest = func.greatest if s.get_bind().dialect.name == "postgresql" else func.max
    changes: dict[str, Any] = {c: stored[c] + statement.excluded[c] for c in added}
    for c in latest:
        old, new = stored[c], statement.excluded[c]
        changes[c] = greatest(func.coalesce(old, new), func.coalesce(new, old))
    s.execute(statement.on_conflict_do_update(index_elements=list(conflict), set_=changes))
