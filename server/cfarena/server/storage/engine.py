"""Engines from URLs, SQLite connection settings, and running the migrations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
DEFAULT_URL = "sqlite:///cfarena.db"
SQLITE_BUSY_TIMEOUT_S = 30.0
PG_CONNECT_TIMEOUT_S = 10
# execution option naming the SQLite BEGIN mode ("IMMEDIATE" for writers)
SQLITE_BEGIN = "cfarena_sqlite_begin"
_MIGRATION_LOCK = 0x6366_6172  # pg advisory lock key ("cfar")


class StorageError(Exception):
    """The database cannot be opened or used; the message is one line, fit for the CLI."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (DB drivers add SQL and hints below)."""
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else exc).strip()
    first = message.splitlines()[0] if message else type(exc).__name__
    return first.strip()


def parse_url(url: str | URL) -> URL:
    try:
        return make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StorageError(f"invalid database URL {str(url)!r}: {one_line(exc)}") from exc


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        # Take over transaction control from pysqlite, so BEGIN is ours (see _on_begin).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(url: str | URL) -> Engine:
    """An engine for `url` (not connected yet); SQLite gets WAL, foreign keys, a busy timeout."""
    parsed = parse_url(url)
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
        _sqlite_setup(engine)
    return engine


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database to `revision` in one transaction (a no-op when already there)."""
    config = alembic_config()
    writer = engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
    with writer.begin() as conn:
        if conn.dialect.name == "postgresql":
            # concurrent openers of a fresh database: one migrates, the others wait
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
