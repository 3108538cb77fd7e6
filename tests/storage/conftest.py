"""A `db` with cfarena's schema, on SQLite and on PostgreSQL: a copy of a database
migrated once per run (a copied SQLite file; on PostgreSQL the session cluster's
migrated template, `CREATE DATABASE ... TEMPLATE`), not a migration per test. The
migrations themselves are tested from empty databases (`db_url`, test_schema.py)."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cfarena.server.storage import Database, open_database
from tests.harness.postgres import PgCluster

_databases = itertools.count()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to the current schema, for tests to copy."""
    path = tmp_path_factory.mktemp("migrated") / "cfarena.db"
    open_database(f"sqlite:///{path}").close()
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        path = tmp_path / "cfarena.db"
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
        url = f"sqlite:///{path}"
    else:
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        url = cluster.create_database(f"storage{next(_databases)}")
    database = open_database(url)
    try:
        yield database
    finally:
        database.close()
