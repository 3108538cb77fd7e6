"""Migrations build the schema on SQLite and PostgreSQL; open errors are one-line StorageErrors."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

from cfarena.server.storage import Database, StorageError, open_database
from cfarena.server.storage.connect import (
    _migrate,
    alembic_config,
    downgrade,
    make_engine,
    schema_head,
    upgrade,
)
from cfarena.server.storage.models import Base
from tests.harness.ports import free_port
from tests.harness.postgres import PgCluster

from .helpers import TABLES, bots, count, plan, result, snapshot


def _head() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def test_migrations_create_the_schema_of_the_models(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine, replay=True)  # every migration in turn, not the models' fast path
    db = Database(engine)
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


def _schema(engine: Engine) -> dict[str, Any]:
    """Everything a migration may name or rely on, table by table: the columns in order
    (type, null, default), the primary key, foreign keys, indexes (partial ones with
    their condition), unique and check constraints, each with its name; and the rows of
    the version table."""
    found: dict[str, Any] = {}
    with engine.connect() as conn:
        seen = inspect(conn)
        for table in seen.get_table_names():
            found[table] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"], c.get("default"))
                            for c in seen.get_columns(table)],
                "primary key": seen.get_pk_constraint(table),
                "foreign keys": sorted(
                    (str(f["name"]), f["constrained_columns"], f["referred_table"],
                     f["referred_columns"], sorted(f["options"].items()))
                    for f in seen.get_foreign_keys(table)),
                "indexes": sorted(
                    (str(i["name"]), i["column_names"], bool(i["unique"]),
                     sorted((k, str(v)) for k, v in i.get("dialect_options", {}).items()))
                    for i in seen.get_indexes(table)),
                "unique": sorted((str(u["name"]), u["column_names"])
                                 for u in seen.get_unique_constraints(table)),
                "checks": sorted((str(c["name"]), " ".join(c["sqltext"].split()))
                                 for c in seen.get_check_constraints(table)),
            }
        found["version rows"] = conn.execute(text("SELECT * FROM alembic_version")).all()
        # and the database's own definitions, which the reflection above does not fully
        # read (collations, AUTOINCREMENT, index order and expressions, deferrable keys,
        # identity columns, sequences)
        found["definitions"] = (_sqlite_definitions(conn) if conn.dialect.name == "sqlite"
                                else _postgresql_definitions(conn))
    return found


def _sqlite_definitions(conn: Connection) -> dict[str, Any]:
    """Each table's and index's SQL as SQLite keeps it, with quotes and spacing taken
    out: a table's column definitions in order, its table constraints in any order (a
    batch migration writes them in another order; the order means nothing)."""
    found: dict[str, Any] = {}
    for kind, name, sql in conn.exec_driver_sql(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"):
        flat = " ".join(str(sql).replace('"', "").split())
        if kind != "table":
            found[name] = flat
            continue
        body, tail = flat[flat.index("(") + 1:].rsplit(")", 1)
        parts, depth, start = [], 0, 0
        for i, char in enumerate(body):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and depth == 0:
                parts.append(body[start:i].strip())
                start = i + 1
        parts.append(body[start:].strip())
        constraint = ("CONSTRAINT ", "PRIMARY KEY", "FOREIGN KEY", "UNIQUE", "CHECK")
        found[name] = ([p for p in parts if not p.upper().startswith(constraint)],
                       sorted(p for p in parts if p.upper().startswith(constraint)),
                       tail.strip())
    return found


def _postgresql_definitions(conn: Connection) -> dict[str, Any]:
    """PostgreSQL's own definitions in the public schema: each column (in order) with
    its type, null, default, identity, generation and collation; every constraint's and
    index's definition; the sequences."""
    columns = conn.execute(text(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        " pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated, co.collname"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
        " WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0"
        " AND NOT a.attisdropped ORDER BY c.relname, a.attnum")).all()
    constraints = conn.execute(text(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2")).all()
    indexes = conn.execute(text(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
    )).all()
    sequences = conn.execute(text(
        "SELECT sequencename, data_type::text, start_value, increment_by FROM pg_sequences"
        " WHERE schemaname = 'public' ORDER BY 1")).all()
    return {"columns": columns, "constraints": constraints, "indexes": indexes,
            "sequences": sequences}


def _another_empty(db_url: str, name: str, tmp_path: Path,
                   request: pytest.FixtureRequest) -> str:
    """One more empty database on `db_url`'s backend, as `db_url` is made (conftest)."""
    if db_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / f'{name}.db'}"
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database(f"{name}_{tmp_path.name[-20:]}", empty=True)


def test_a_new_database_is_the_migrated_one(db_url: str, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    """A new database is created from the models (no Alembic, `connect._create_at_head`):
    it must be what the migrations build, or a later migration would meet a schema it
    was not written for."""
    replayed_url = _another_empty(db_url, "replayed", tmp_path, request)
    new, replayed = make_engine(db_url), make_engine(replayed_url)
    try:
        upgrade(new)
        upgrade(replayed, replay=True)
        created, migrated = _schema(new), _schema(replayed)
        assert created.keys() == {*TABLES, "alembic_version", "version rows", "definitions"}
        assert created["version rows"] == [(schema_head(),)]
        for part in migrated:
            assert created[part] == migrated[part], part
    finally:
        new.dispose()
        replayed.dispose()


def test_openers_of_a_new_database_at_once_create_it_once(
        db_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Workers started together on a new database: one creates the schema, the others
    wait for it (SQLite's write lock, PostgreSQL's advisory lock) and find it made. On
    SQLite a new file's switch to WAL is a race of its own (`connect._journal_mode_wal`):
    a few new databases, to meet it."""
    openers, databases = 6, 4
    urls = [db_url, *(_another_empty(db_url, f"new{n}", tmp_path, request)
                      for n in range(1, databases))]
    for url in urls:
        together = threading.Barrier(openers)

        def open_it(url: str = url, together: threading.Barrier = together) -> None:
            together.wait()
            open_database(url).close()

        with ThreadPoolExecutor(openers) as pool:
            for opened in [pool.submit(open_it) for _ in range(openers)]:
                opened.result()
        engine = make_engine(url)
        try:
            schema = _schema(engine)
        finally:
            engine.dispose()
        assert schema.keys() == {*TABLES, "alembic_version", "version rows", "definitions"}
        assert schema["version rows"] == [(schema_head(),)]


def test_the_head_read_from_file_names_is_alembics() -> None:
    # `upgrade` skips Alembic for a database at `schema_head()`: a migration whose file
    # name and revision disagree would be skipped everywhere
    assert schema_head() == _head()
    scripts = ScriptDirectory.from_config(alembic_config())
    for script in scripts.walk_revisions():
        assert Path(script.path).name.startswith(f"{script.revision}_"), script.path


def test_a_database_one_migration_behind_is_upgraded_on_open(db_url: str) -> None:
    db = open_database(db_url)
    try:
        previous = ScriptDirectory.from_config(alembic_config()).get_revision(_head())
        assert previous is not None and isinstance(previous.down_revision, str)
        downgrade(db.engine, previous.down_revision)
        with db.engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() != _head()
    finally:
        db.close()
    again = open_database(db_url)
    try:
        with again.engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == _head()
    finally:
        again.close()


def test_a_database_with_a_newer_schema_is_refused_and_says_why(db_url: str) -> None:
    db = open_database(db_url)
    try:
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    finally:
        db.close()
    with pytest.raises(StorageError, match=r"has schema revision 9999, newer than this "
                       rf"cfarena's {_head()}: run the cfarena that upgraded it"):
        open_database(db_url)


def test_a_newer_schema_written_while_waiting_for_the_lock_is_refused(db_url: str) -> None:
    """An opener that read an older revision, then waited for the migration lock while
    a newer cfarena upgraded the database, says so rather than Alembic's "can't locate
    revision" (`_migrate` is what `upgrade` calls once its unlocked read was older)."""
    db = open_database(db_url)
    try:
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(StorageError, match=r"has schema revision 9999, newer than this"):
            _migrate(db.engine, "head")
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


def _faults(db: Database) -> list[tuple[str, ...]]:
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT match_id, seat, bot_id, kind, detail, at_turn "
                                 "FROM faults ORDER BY id")).all()
    return [tuple(str(v) for v in row) for row in rows]


def test_0002_keeps_the_faults_of_a_0001_database_and_downgrades(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine, "0001")
    old = Database(engine)  # raw SQL: the models are those of the head revision
    try:
        mid, alice, bob = "g0", 1, 2
        with engine.begin() as conn:
            for bot_id, name in ((alice, "alice"), (bob, "bob")):
                conn.execute(text("INSERT INTO bots (id, name, token_hash, created_at) VALUES "
                                  "(:i, :n, :h, CURRENT_TIMESTAMP)"),
                             {"i": bot_id, "n": name, "h": f"{bot_id:064x}"})
            conn.execute(text("INSERT INTO matches (id, key, ordinal, pool, seed, rules, "
                              "players, status, created_at) VALUES (:m, :m, 0, 'standard/2p', "
                              "1, '{}', 2, 'scheduled', CURRENT_TIMESTAMP)"), {"m": mid})
            for seat, bot_id in enumerate((alice, bob)):
                conn.execute(text("INSERT INTO match_seats (match_id, seat, bot_id, forfeited, "
                                  "faults) VALUES (:m, :s, :b, false, 0)"),
                             {"m": mid, "s": seat, "b": bot_id})
            conn.execute(text("INSERT INTO faults (match_id, seat, bot_id, kind, detail, "
                              "at_turn, created_at) VALUES (:m, 1, :b, 'timeout', 'slow', 4, "
                              "CURRENT_TIMESTAMP)"), {"m": mid, "b": bob})
        before = _faults(old)
    finally:
        old.close()
    db = open_database(db_url)  # 0001 -> head: SQLite copies the faults table (batch mode)
    try:
        assert _faults(db) == before
        with db.engine.connect() as conn:  # one check on the kind, now with "limit"
            [check] = inspect(conn).get_check_constraints("faults")
        assert check["name"] == "ck_faults_ck_faults_kind" and "'limit'" in check["sqltext"]
        with db.engine.begin() as conn:
            conn.execute(text("INSERT INTO seat_logs (match_id, seat, output, output_bytes) "
                              "VALUES (:m, 0, 'hi', 2)"), {"m": mid})
            conn.execute(text("INSERT INTO faults (match_id, seat, bot_id, kind, detail, "
                              "created_at) VALUES (:m, 0, :b, 'limit', 'memory limit 512 MiB "
                              "exceeded', CURRENT_TIMESTAMP)"), {"m": mid, "b": alice})
        downgrade(db.engine, "0001")  # and back: "limit" faults become disconnects
        with db.engine.connect() as conn:
            assert "seat_logs" not in inspect(conn).get_table_names()
        assert _faults(db) == [*before, (mid, "0", str(alice), "disconnect",
                                         "memory limit 512 MiB exceeded", "None")]
        upgrade(db.engine)
        assert count(db, "faults") == 2 and count(db, "seat_logs") == 0
    finally:
        db.close()


def _skill_history(db: Database) -> list[tuple[str, ...]]:
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT match_id, bot_id, version, pool, mu, sigma "
                                 "FROM skill_history ORDER BY id")).all()
    return [tuple(str(v) for v in row) for row in rows]


def test_0006_gives_an_older_database_the_rating_history_it_would_have_kept(
        db_url: str) -> None:
    db = open_database(db_url)
    try:
        alice, bob, carol = bots(db, "alice", "bob", "carol")
        seatings = [[alice, bob], [bob, carol, alice], [carol, alice], [alice, bob]]
        ids = db.schedule_matches(None, [plan(f"m{i}", seats, seed=i)
                                         for i, seats in enumerate(seatings)])
        for i, (mid, seats) in enumerate(zip(ids, seatings, strict=True)):
            ranks = [1 + (i + seat) % len(seats) for seat in range(len(seats))]
            assert db.record_match(result(mid, [list(ranks)], ranks))
        kept = _skill_history(db)
        # 2 pools (the match's and global) x the seats of every match
        assert len(kept) == 2 * sum(len(seats) for seats in seatings)
        downgrade(db.engine, "0005")  # a database of 0005 (no history) ...
        with db.engine.connect() as conn:
            assert "skill_history" not in inspect(conn).get_table_names()
        upgrade(db.engine)  # ... replays its finished matches once
        assert _skill_history(db) == kept
    finally:
        db.close()


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
    port = free_port()  # a port nothing listens on
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
