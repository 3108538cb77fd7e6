"""Who is playing a tournament: an exclusive lock per tournament, freed when its holder dies.

Two `run-tournament` processes must never play one tournament at once (each
would replay the other's pending matches). The lock is one the operating
system or the database server frees by itself when the holding process dies
(kill -9 included), so a crashed run never leaves a stale lock behind:

- SQLite: a POSIX record lock (`fcntl.lockf`) on one byte of the database file
  itself, far past any data and SQLite's own lock bytes (`_LOCK_BASE` +
  `tournament_id`): no file of its own, and exclusive wherever the file is shared
  (other network or mount namespaces, containers on one volume). Closing any
  descriptor of a file drops every POSIX lock the process holds on it, SQLite's
  own included, so the descriptor is opened once per database file and kept open
  for the process's life (`_files`); the lock is released by unlocking its byte.
  POSIX locks do not exclude their own process, so the process keeps a set of the
  locks it holds and refuses itself a second time (as PostgreSQL does). Taking it
  needs the database file opened for writing: a sandboxed bot cannot see the file;
- PostgreSQL: a session advisory lock `pg_try_advisory_lock(CLASS, tournament_id)`
  on a connection kept open while the lock is held.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from cfarena.server.storage.connect import StorageError, one_line

# first key of cfarena's advisory locks ("cf" + 1: tournaments)
_ADVISORY_CLASS = 0x6366_0001
# SQLite: the byte locked for tournament 0 (SQLite's lock bytes are at 1 GiB)
_LOCK_BASE = 1 << 60
_files: dict[tuple[int, int], int] = {}  # (device, inode) -> a descriptor never closed
_held: set[tuple[int, int, int]] = set()  # (device, inode, tournament id) held here
_guard = threading.Lock()


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
        with _sqlite_lock(database, tournament_id, busy):
            yield
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


@contextlib.contextmanager
def _sqlite_lock(database: str, tournament_id: int, busy: TournamentBusy) -> Iterator[None]:
    """The record lock on byte `_LOCK_BASE + tournament_id` of the database file."""
    try:
        with _guard:
            file = os.stat(database)
            held = (file.st_dev, file.st_ino, tournament_id)
            if held in _held:
                raise busy
            fd = _files.get(held[:2])
            if fd is None:  # not inherited by the processes this one starts
                fd = _files[held[:2]] = os.open(database, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _LOCK_BASE + tournament_id)
            except (BlockingIOError, PermissionError):
                raise busy from None
            _held.add(held)
    except OSError as exc:
        raise StorageError(f"cannot lock tournament {tournament_id}: "
                           f"{exc.strerror or exc}") from exc
    try:
        yield
    finally:
        with _guard:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _LOCK_BASE + tournament_id)
            _held.discard(held)
