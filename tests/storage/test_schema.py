"""Migrations build the schema on SQLite and PostgreSQL; open errors are one-line StorageErrors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from cfarena.server.storage import Database, StorageError, open_database
from cfarena.server.storage.engine import alembic_config, upgrade
from cfarena.server.storage.models import Base

from .helpers import TABLES, bots, plan, snapshot


def _head() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def test_migrations_create_the_schema_of_the_models(db_url: str) -> None:
    db = open_database(db_url)
    try:
        with db.engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == {*TABLES, "alembic_version"}
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert context.get_current_revision() == _head()
            # the migrated database and the ORM models agree on tables, columns, types, indexes
            diffs = [d for d in compare_metadata(context, Base.metadata)
                     if not (d[0] == "remove_table" and d[1].name == "alembic_version")]
            assert diffs == []
    finally:
        db.close()


def test_upgrading_again_is_a_no_op_and_keeps_data(db_url: str) -> None:
    db = open_database(db_url)
    try:
        alice, bob = bots(db, "alice", "bob")
        db.schedule_matches(db.create_tournament("t", {"games": 1}), [plan("g0", [alice, bob])])
        before = snapshot(db)
        upgrade(db.engine)
        assert snapshot(db) == before
    finally:
        db.close()
    again = open_database(db_url)
    try:
        assert snapshot(again) == before
        assert [b.name for b in again.list_bots()] == ["alice", "bob"]
    finally:
        again.close()


def test_sqlite_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        db.close()


def test_foreign_keys_are_enforced(db: Database) -> None:
    with pytest.raises(StorageError, match=r"(?i)foreign key"):
        db.schedule_matches(None, [plan("m", [1, 2])])  # no such bots
    assert db.list_matches() == []


def _one_line(exc: StorageError) -> str:
    message = str(exc)
    assert message and "\n" not in message
    return message


def test_sqlite_in_a_missing_directory_is_a_storage_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'cfarena.db'}"
    with pytest.raises(StorageError) as info:
        open_database(url)
    assert "unable to open database file" in _one_line(info.value)


def test_unreachable_postgres_is_a_storage_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StorageError) as info:
        open_database(f"postgresql+psycopg://postgres:secret@127.0.0.1:{port}/cfarena")
    message = _one_line(info.value)
    assert f"127.0.0.1:{port}" in message
    assert "secret" not in message


@pytest.mark.parametrize("url", ["not a url", "nosuchdialect://x/y", ""])
def test_invalid_urls_are_storage_errors(url: str) -> None:
    with pytest.raises(StorageError) as info:
        open_database(url)
    _one_line(info.value)


def test_a_file_that_is_no_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(StorageError) as info:
        open_database(f"sqlite:///{path}")
    assert "not a database" in _one_line(info.value)
