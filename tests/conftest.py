"""Shared fixtures: a session PostgreSQL cluster, a `db_url` run on SQLite and PostgreSQL,
and a session headless Chromium (`browser`, `page`: tests/browser.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.browser import browser, page  # noqa: F401  (fixtures: headless Chromium)
from tests.pg import PgCluster, postgres_cluster

# Property tests check behaviour, not speed (benchmarks/ measure that): no per-example
# deadline, which a busy machine would turn into spurious failures.
settings.register_profile("cfarena", deadline=None)
settings.load_profile("cfarena")

_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    with postgres_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pg_url(pg_cluster: PgCluster) -> str:
    """URL of the session cluster's maintenance database (create your own databases in it)."""
    return pg_cluster.url("postgres")


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file in tmp_path, or a fresh database in the session cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cfarena.db'}"
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database(f"t{next(_databases)}")

