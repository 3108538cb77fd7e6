"""Shared fixtures: a session PostgreSQL cluster (its databases copies of a migrated
template), a cluster of a module's own for the tests that stop it, a `db_url` run on
SQLite and PostgreSQL, and a session headless Chromium (`browser`, `page`:
tests/browser.py).

The suite runs on pytest-xdist workers (`-n` in pyproject.toml's addopts) with
`--dist loadgroup`: each worker has its own session fixtures (its own cluster),
the tests of a module with a module-scoped fixture go to one worker together (the
fixture is set up once), and so do the tests of tests/fairplay (one session of
hostile tournaments). Each test shares the host with the tests on other workers
(`tests.harness.host.shared`) unless it is marked `host_alone`."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.browser import browser, page  # noqa: F401  (fixtures: headless Chromium)
from tests.harness import host
from tests.harness.postgres import PgCluster, postgres_cluster

# Property tests check behaviour, not speed (benchmarks/ measure that): no per-example
# deadline, which a busy machine would turn into spurious failures.
settings.register_profile("cfarena", deadline=None)
settings.load_profile("cfarena")

_databases = itertools.count()
TESTS = Path(__file__).resolve().parent
# a fair-play test's setup may wait for the host (`host.alone`) and play every hostile
# scenario (tests/fairplay/arena.py, up to 3 * RUN_TIMEOUT): more than pytest's 300 s
FAIRPLAY_TIMEOUT_S = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """xdist groups (see the module docstring): what must run on one worker together.
    A module with a module-scoped fixture goes whole (a worker that ran out of tests
    tears its fixtures down: sent in parts, the fixture could be set up twice)."""
    whole: set[Path] = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(d.scope == "module" for defs in
                                    info.name2fixturedefs.values() for d in defs):
            whole.add(item.path)
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if TESTS / "fairplay" in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("fairplay"))
            if item.get_closest_marker("timeout") is None:  # its first test's setup plays
                item.add_marker(pytest.mark.timeout(FAIRPLAY_TIMEOUT_S))  # every scenario
        elif item.path in whole:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS).as_posix()))


@pytest.fixture(autouse=True)
def _host_share(request: pytest.FixtureRequest) -> Iterator[None]:
    """The host, shared with the tests on other workers, or this test's alone."""
    hold = host.alone if request.node.get_closest_marker("host_alone") else host.shared
    with hold():
        yield


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's cluster: `create_database` copies a database with the schema."""
    with postgres_cluster() as cluster:
        yield cluster.with_template("cfarena_template")


@pytest.fixture(scope="session")
def pg_url(pg_cluster: PgCluster) -> str:
    """URL of the session cluster's maintenance database (create your own databases in it)."""
    return pg_cluster.url("postgres")


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PgCluster]:
    """A cluster of the module's own: its tests stop and restart it (outages), which
    disturbs no other test. Its databases are created empty."""
    with postgres_cluster() as cluster:
        yield cluster


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file in tmp_path, or a fresh database in the session cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cfarena.db'}"
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database(f"t{next(_databases)}", empty=True)
