"""Who is playing a tournament: an exclusive lock per tournament, freed when its holder dies.

Two `run-tournament` processes must never play one tournament at once (each
would replay the other's pending matches). The lock is one the operating
system or the database server frees by itself when the holding process dies
(kill -9 included), so a crashed run never leaves a stale lock behind:

- SQLite: an abstract Unix socket (Linux; no file anywhere) named after the
  database file (its device and inode) and `tournament_id`: the name stays bound
  while the socket is open, a second bind is refused. Processes in one network
  namespace share the names (sandboxed bots have their own, so they cannot take
  or see them);
- PostgreSQL: a session advisory lock `pg_try_advisory_lock(CLASS, tournament_id)`
  on a connection kept open while the lock is held.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import Iterator

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from cfarena.server.storage.connect import StorageError, one_line

# first key of cfarena's advisory locks ("cf" + 1: tournaments)
_ADVISORY_CLASS = 0x6366_0001


class TournamentBusy(StorageError):
    """Another process is playing this tournament."""


@contextlib.contextmanager
def tournament_lock(engine: Engine, tournament_id: int) -> Iterator[None]:
    """Hold the tournament's lock for the `with` block, or raise TournamentBusy at once."""
    busy = TournamentBusy(f"tournament {tournament_id} is being played by another cfarena "
                          "process; wait for it to end, or stop it and run again to resume")
    if engine.dialect.name == "sqlite":
        database = engine.url.database
        if not database or database == ":memory:":
            yield  # a private in-memory database: nobody else can reach it
            return
        try:
            file = os.stat(database)
        except OSError as exc:
            raise StorageError(f"cannot lock tournament {tournament_id}: "
                               f"{exc.strerror or exc}") from exc
        name = f"\0cfarena-tournament/{file.st_dev}/{file.st_ino}/{tournament_id}"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as holder:  # not inherited
            try:
                holder.bind(name)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise busy from None
                raise StorageError(f"cannot lock tournament {tournament_id}: {exc}") from exc
            yield  # closing the socket (or the holder's death) frees the name
        return
    try:
        connection = engine.connect()
    except SQLAlchemyError as exc:
        raise StorageError(f"cannot lock tournament {tournament_id}: {one_line(exc)}") from exc
    try:
        got = connection.execute(text("select pg_try_advisory_lock(:a, :b)"),
                                 {"a": _ADVISORY_CLASS, "b": tournament_id}).scalar()
        connection.commit()
        if not got:
            raise busy
        yield
    finally:
        # drop the connection itself (not back to the pool): its session, and the
        # lock with it, ends even when the database cannot be told to unlock
        with contextlib.suppress(SQLAlchemyError):
            connection.invalidate()
            connection.close()
