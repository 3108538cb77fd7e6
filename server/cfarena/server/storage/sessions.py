"""A database's short transactions: what every store of `Database` is built on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from cfarena.server.storage.connect import SQLITE_BEGIN, StorageError, one_line


class Sessions:
    """The engine of one database and its sessions; a store's every call is one short
    transaction (`_session`), a database error a `StorageError`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._reader = sessionmaker(engine, expire_on_commit=False)
        # SQLite writers take the write lock up front (BEGIN IMMEDIATE): no
        # read-then-upgrade deadlocks between processes, the busy timeout applies.
        writer = engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
        self._writer = sessionmaker(writer, expire_on_commit=False)

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[Session]:
        maker = self._writer if write else self._reader
        try:
            with maker() as session, session.begin():
                yield session
        except DBAPIError as exc:
            raise StorageError(f"database error: {one_line(exc)}") from exc


def one_snapshot(s: Session) -> None:
    """On PostgreSQL, make the reads of `s`'s transaction see one moment (REPEATABLE
    READ: under READ COMMITTED each statement sees its own); SQLite's read transaction
    has one snapshot already. Call it before the transaction's first statement."""
    if s.get_bind().dialect.name == "postgresql":
        s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
