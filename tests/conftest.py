"""Shared fixtures: a session PostgreSQL cluster (its databases copies of a migrated
template), a cluster of a module's own for the tests that stop it, a `db_url` run on
SQLite and PostgreSQL, and a session headless Chromium (`browser`, `page`:
tests/browser.py).

README.md's test command runs the suite in two steps: on pytest-xdist workers
(`-n 4 --dist loadgroup -m "not host_alone"`), then the tests marked `host_alone` in
one process (`-m host_alone`). On the workers, the tests of a module with a
module-scoped fixture go to one worker together (the fixture is set up once), and so
do the tests of tests/fairplay (one session of hostile tournaments). A `host_alone`
test checks a defence that holds only while no other test's `cfarena` process plays
on the host (the page-cache reset between a tournament's phases,
`cfarena.server.sandbox.host_reset`); the other workers' module and session fixtures
(a served arena, a played tournament) live between their tests, so no lock taken
around tests can give it the host: it is refused on a worker. `pytest` alone runs
everything in one process.

The page-cache reset between a tournament's phases (`cfarena.server.sandbox.host_reset`)
is turned off (`CFARENA_HOST_RESET=off`, set here unless the environment sets it) for
every test but those of the defence itself (tests/fairplay/test_page_cache.py and the
session arena's page-cache runs turn it back on, tests/tournament/test_host_defences.py
unsets it): each drop empties the host's
page cache, so every later Python start, of any test or xdist worker, reads its modules
from disk again, and a run with the reset off records it as not held.

`CFARENA_TEST_USAGE=FILE` records each test's wall time and the machine's CPU time
(tests/harness/usage.py)."""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from cfarena.bots import BUNDLED
from cfarena.server.sandbox.host_reset import OFF_ENV as HOST_RESET_ENV
from tests.browser import browser, page  # noqa: F401  (fixtures: headless Chromium)
from tests.harness.postgres import PgCluster, close_kept, postgres_cluster
from tests.harness.usage import ENV as USAGE_ENV
from tests.harness.usage import UsageRecorder

# Property tests check behaviour, not speed (benchmarks/ measure that): no per-example
# deadline, which a busy machine would turn into spurious failures.
settings.register_profile("cfarena", deadline=None)
settings.load_profile("cfarena")

os.environ.setdefault(HOST_RESET_ENV, "off")  # see the module docstring
# a bundled bot's setting exported in a developer's shell would reach the bundled bots
# of every tournament the tests play (and their identities): tests that want one set it
for _variable in (v for bot in BUNDLED.values() for v in bot.settings):
    os.environ.pop(_variable, None)

_databases = itertools.count()
TESTS = Path(__file__).resolve().parent
# a fair-play test's setup may play every hostile scenario (tests/fairplay/arena.py,
# up to 3 * RUN_TIMEOUT): more than pytest's 300 s
FAIRPLAY_TIMEOUT_S = 900


def pytest_configure(config: pytest.Config) -> None:
    usage = os.environ.get(USAGE_ENV)
    # (on xdist the workers run the tests and record them, not the controller)
    if usage and not getattr(config.option, "numprocesses", None):
        config.pluginmanager.register(UsageRecorder(Path(usage).resolve()), "cfarena-usage")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """xdist groups (see the module docstring): what must run on one worker together.
    A module with a module-scoped fixture goes whole (a worker that ran out of tests
    tears its fixtures down: sent in parts, the fixture could be set up twice).
    First of the hooks: xdist's own (`--dist loadgroup`) reads the groups from the
    markers, and after it a marker is ignored (the fair-play session was played on
    each worker)."""
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
        elif TESTS / "starters" in item.path.parents:  # the kits, built once a session
            item.add_marker(pytest.mark.xdist_group("starters"))
        elif item.path in whole:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS).as_posix()))
    # the longest tests first: pytest-xdist hands out the tests outside a group (each its
    # own unit of work, after the groups) in this order, so none starts near the end
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the modules and items, as long-lived as the run) goes out of
    the collector's sight in each process that collected (every xdist worker): no
    collection during the tests, nor at exit, walks it again (~6 % of the CPU of
    `pytest -n 0 tests/engine tests/replay`)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def unfrozen_heap() -> Iterator[None]:
    """Nothing frozen during the test (a frozen object that dies lowers
    `gc.get_freeze_count()`): for a test that checks what its code froze."""
    gc.unfreeze()
    yield
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `host_alone` test on an xdist worker fails before its fixtures start anything;
    so does a grouped test whose group pytest-xdist lost (its node id, by which xdist
    sends tests with `--dist loadgroup`, does not carry it): a module's fixture or the
    fair-play session would be set up on every worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if item.get_closest_marker("host_alone") and worker:
        pytest.fail("this test needs the host without the run's other tests: run it in a "
                    "serial step, `pytest -m host_alone` without -n, and the rest with "
                    "-m 'not host_alone' (docs/ARCHITECTURE.md, the test suite)",
                    pytrace=False)
    groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                     for mark in item.iter_markers("xdist_group")})
    if worker and groups and not item.config.getvalue("loadgroup"):
        pytest.fail("this test belongs to a group that must run on one worker: run the "
                    "workers with --dist loadgroup (README.md's test command)", pytrace=False)
    if worker and groups and not item.nodeid.endswith("@" + "_".join(groups)):
        pytest.fail("pytest-xdist lost this test's group (with pytest 9.2: "
                    "pytest-dev/pytest-xdist#1386; pyproject.toml pins pytest below it)",
                    pytrace=False)


@pytest.fixture(autouse=True)
def _close_kept_connections() -> Iterator[None]:
    """A test's polling connections (`tests.harness.postgres.query`) end with it."""
    yield
    close_kept()


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
