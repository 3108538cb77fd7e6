"""Engines from URLs, SQLite connection settings, and running the migrations."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import (
    Column,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    create_engine,
    event,
    inspect,
    make_url,
    text,
)
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_S = 30.0
# each SQLite connection's page cache, in KiB (SQLite's default: 2000). A cache fills as
# the file grows and a long-running `serve` holds up to 15 pooled connections: at the
# default their caches alone grew serve by ~2 KiB per match over thousands of matches
# (benchmarks/soak.py --probe); the pages not cached come from the system's file cache
SQLITE_CACHE_KIB = 512
PG_CONNECT_TIMEOUT_S = 10
# execution option naming the SQLite BEGIN mode ("IMMEDIATE" for writers)
SQLITE_BEGIN = "cfarena_sqlite_begin"
_MIGRATION_LOCK = 0x6366_6172  # pg advisory lock key ("cfar")
_VERSION_TABLE = "alembic_version"  # alembic's: present in every cfarena database


class StorageError(Exception):
    """The database cannot be opened or used; the message is one line, fit for the CLI."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (DB drivers add SQL and hints below)."""
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else exc).strip()
    first = message.splitlines()[0] if message else type(exc).__name__
    return first.strip()


# The URL forms cfarena accepts; `postgres://` and `postgresql://` (what hosting
# providers hand out) mean the psycopg 3 driver, a dependency of cfarena.
URL_FORMS = "sqlite:///FILE or postgresql://USER:PASSWORD@HOST[:PORT]/DB"
_SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
_POSTGRES_DRIVERS = ("postgres", "postgresql", "postgresql+psycopg")
PG_DRIVER = "postgresql+psycopg"


def parse_url(url: str | URL) -> URL:
    """`url` parsed, with `postgres://` and `postgresql://` meaning `postgresql+psycopg://`.

    `StorageError` (one line naming the accepted forms) for a URL that does not
    parse or whose scheme cfarena does not speak.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StorageError(
            f"invalid database URL {_shown(url)!r}: {one_line(exc)}; use {URL_FORMS}"
        ) from exc
    scheme = parsed.drivername
    if scheme in _POSTGRES_DRIVERS:
        return parsed.set(drivername=PG_DRIVER)
    if scheme not in _SQLITE_DRIVERS:
        raise StorageError(
            f"unsupported database URL scheme {scheme + '://'!r} in {_shown(parsed)!r}: use "
            f"{URL_FORMS} (postgres:// and postgresql+psycopg:// work too)"
        )
    return parsed


def _shown(url: str | URL) -> str:
    """A URL for a message: its password hidden when it parses."""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return url


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite URL, or None (an in-memory database, or not SQLite)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    name = url.database
    if str(url.query.get("uri", "")).lower() in ("true", "1"):  # sqlite:///file:NAME?uri=true
        name = name.removeprefix("file:")
        if name in ("", ":memory:") or url.query.get("mode") == "memory":
            return None
    return Path(name)


def _sqlite_setup(engine: Engine, *, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        # Take over transaction control from pysqlite, so BEGIN is ours (see _on_begin).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            if not read_only:  # the journal mode is written into the file
                _journal_mode_wal(cursor)
                cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _journal_mode_wal(cursor: sqlite3.Cursor) -> None:
    """Put the database in WAL mode. A new file's first switch takes an exclusive lock,
    and SQLite answers "database is locked" at once, without waiting its busy timeout,
    to another connection switching it at the same moment (processes opening one new
    file together: tests/storage/test_schema.py): that one tries again, for up to the
    busy timeout, and then finds the file in WAL mode already."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def make_engine(url: str | URL, *, create: bool = True) -> Engine:
    """An engine for `url` (not connected yet); SQLite gets WAL, foreign keys, a busy timeout.

    With `create=False` a SQLite file that does not exist is refused (`StorageError`
    "no database at PATH") before anything could create it, and one this process
    cannot write (a read-only mount, a file or directory without write permission)
    is opened read-only (`is_read_only`); a PostgreSQL server says itself whether
    the database exists, when the engine connects.
    """
    parsed = parse_url(url)
    if not create:
        path = sqlite_file(parsed)
        if path is not None and not path.exists():
            raise StorageError(f"no database at {path}")
        if path is not None and _sqlite_has_schema(path) is False:  # nor write to it
            raise StorageError(_no_schema(parsed))
    read_only = False
    path = sqlite_file(parsed)
    if path is not None and path.exists() and not _writable(path):
        if create:  # what would write: say why it cannot
            raise StorageError(f"cannot write the database {path}: it is read-only (a "
                               "read-only mount, or no write permission); commands that "
                               "only read it work")
        parsed, read_only = _read_only_url(path), True
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False}
        if parsed.database in (None, "", ":memory:"):
            kwargs["poolclass"] = StaticPool
    elif backend == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
    try:
        engine = create_engine(parsed, **kwargs)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise StorageError(
            f"cannot open database {parsed.render_as_string()}: {one_line(exc)}"
        ) from exc
    if backend == "sqlite":
        _sqlite_setup(engine, read_only=read_only)
    return engine


def _writable(path: Path) -> bool:
    """Whether SQLite can write `path`: the file, and its directory (journal, -wal, -shm)."""
    return os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK)


def _read_only_url(path: Path) -> URL:
    """A SQLite URL opening `path` read-only. On a read-only file system nothing can change
    the file, so it is opened immutable: SQLite then needs no -shm file (a WAL database
    needs one to be read, and none can be made there) and takes no locks."""
    query = {"mode": "ro", "uri": "true"}
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        query["immutable"] = "1"
    return URL.create("sqlite", database="file:" + quote(str(path.resolve())), query=query)


def is_read_only(engine: Engine) -> bool:
    """Whether `engine` opens its SQLite database read-only (`make_engine`, create=False)."""
    return engine.url.query.get("mode") == "ro"


def _sqlite_has_schema(path: Path) -> bool | None:
    """Whether a SQLite file holds cfarena's tables, looked at read-only (opening it
    the usual way would turn it into a WAL database); None if it cannot be read so."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError):
        return None
    try:
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (_VERSION_TABLE,)).fetchone()
    except sqlite3.Error:
        return None  # not a database, say: the usual way names the problem
    finally:
        conn.close()
    return row is not None


def _no_schema(url: URL) -> str:
    return (f"no cfarena database at {url.render_as_string(hide_password=True)} (it has no "
            "cfarena tables; `cfarena run-tournament` or `cfarena bots add` creates them)")


def schema_head() -> str:
    """The latest migration's revision, from the file names alone: each migration is
    `versions/NNNN_what.py` with revision "NNNN" (tests/storage check that this is
    Alembic's own head). Reading it costs no Alembic import nor script loading, which
    `upgrade` skips for a database already at it."""
    names = (p.name for p in (MIGRATIONS_DIR / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))
    return max(name[:4] for name in names)


def _versions(engine: Engine) -> list[str] | None:
    """The revisions in the database's `alembic_version` (one row, normally), or None
    without that table (an empty database, or another program's). One read, no lock."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(_VERSION_TABLE):
            return None
        return _version_rows(conn)


def _version_rows(conn: Connection) -> list[str]:
    return [str(row[0]) for row in
            conn.execute(text(f"SELECT version_num FROM {_VERSION_TABLE}")).all()]


def _refuse_newer(engine: Engine, versions: list[str] | None) -> None:
    """`StorageError` for a database whose schema is newer than this cfarena's: an
    older cfarena must not read or write it (Alembic would say only that it cannot
    locate the revision)."""
    head = schema_head()
    newer = [v for v in versions or [] if v > head]
    if newer:
        raise StorageError(
            f"the database {engine.url.render_as_string(hide_password=True)} has schema "
            f"revision {max(newer)}, newer than this cfarena's {head}: run the cfarena "
            "that upgraded it (every serve, worker and CLI on one database must be one "
            "version)")


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(engine: Engine, revision: str = "head", *, create: bool = True,
            replay: bool = False) -> None:
    """Migrate the database to `revision` in one transaction (a no-op when already there).

    With `create=False` a database without cfarena's tables (an empty one, or
    another program's) is refused with `StorageError` instead of given them.
    A database already at the head is only read (`_versions`): no write lock, no
    Alembic; one with a newer schema than this cfarena's is refused (`_refuse_newer`).
    An empty database is given the head's schema from the models (`_create_at_head`)
    unless `replay` (every migration in turn, as Alembic runs them: tests compare the two).
    """
    if revision == "head":
        versions = _versions(engine)
        _refuse_newer(engine, versions)
        if versions == [schema_head()]:
            return
    _migrate(engine, revision, create=create, replay=replay)


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate the database back to `revision` in one transaction (for tests: no
    command offers it, and a migration may refuse, e.g. 0008 while two bots share a
    name)."""
    _migrate(engine, revision, down=True)


def _migrate(engine: Engine, revision: str, *, create: bool = True,
             down: bool = False, replay: bool = False) -> None:
    """`upgrade` or `downgrade`. On SQLite foreign keys are off meanwhile (SQLite's way
    to copy a table others reference, as a migration changing a constraint does) and
    checked before the transaction commits."""
    writer = engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
    with writer.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # before BEGIN: the pragma does nothing inside a transaction
            conn.connection.driver_connection.execute(  # type: ignore[union-attr]
                "PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():
                if not sqlite:
                    # concurrent openers of a fresh database: one migrates, the others wait
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                 {"key": _MIGRATION_LOCK})
                tables = inspect(conn).get_table_names()
                if not create and _VERSION_TABLE not in tables:
                    raise StorageError(_no_schema(engine.url))
                if revision == "head" and not down and not replay:
                    if not tables:
                        _create_at_head(conn)
                        return
                    if _VERSION_TABLE in tables:
                        versions = _version_rows(conn)  # as they are under the lock:
                        _refuse_newer(engine, versions)  # a newer cfarena came first,
                        if versions == [schema_head()]:
                            return  # or another opener of this one
                _run_alembic(conn, revision, down=down)
                if sqlite and conn.exec_driver_sql("PRAGMA foreign_key_check").first():
                    raise StorageError("migrating the database would break its foreign "
                                       "keys: nothing was changed")
        finally:
            if sqlite:
                conn.connection.driver_connection.execute(  # type: ignore[union-attr]
                    "PRAGMA foreign_keys=ON")


def _run_alembic(conn: Connection, revision: str, *, down: bool) -> None:
    """Alembic's upgrade or downgrade to `revision` on `conn`, in its transaction."""
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = conn
    if down:
        command.downgrade(config, revision)
    else:
        command.upgrade(config, revision)


def _create_at_head(conn: Connection) -> None:
    """Give an empty database the head's schema from the models, stamped with the head's
    revision (Alembic's own recipe for a new database: `create_all`, then `stamp head`).
    The version table is written here, not by `alembic stamp`: importing Alembic and
    loading its scripts is most of what a new database cost (~0.15 s of every first
    `cfarena` command, and of ~130 processes in a run of the test suite). A test
    (tests/storage/test_schema.py) holds the result equal to the migrations' own,
    version table included, table by table and constraint by constraint on every
    backend."""
    from cfarena.server.storage.models import Base

    Base.metadata.create_all(conn)
    version = Table(_VERSION_TABLE, MetaData(),  # as Alembic creates it
                    Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name=f"{_VERSION_TABLE}_pkc"))
    version.create(conn)
    conn.execute(version.insert().values(version_num=schema_head()))


def check_current(engine: Engine) -> None:
    """For a database opened read-only, which cannot be migrated: `StorageError` unless
    its schema is this cfarena's latest (reads of an older schema would fail at random)."""
    head = schema_head()
    versions = _versions(engine)
    if versions is None:
        raise StorageError(_no_schema(engine.url))
    _refuse_newer(engine, versions)
    if versions != [head]:
        raise StorageError(
            f"the database {sqlite_file(engine.url)} is read-only and its schema is at "
            f"revision {', '.join(versions) or 'none'}, not this cfarena's {head}: open it "
            "writable once (any cfarena command) to upgrade it")

