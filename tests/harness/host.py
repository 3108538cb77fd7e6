"""Tests that need the host to themselves, among tests that share it.

Some defences hold per host, not per run: the page-cache reset between the phases
of a tournament holds only while no other cfarena process plays on the host
(`cfarena.server.sandbox.host_reset`). A test that checks such a defence runs
`alone()`; every other test of the session runs `shared()` (tests/conftest.py takes
it for each test). With pytest-xdist the workers of one run share a lock directory
(named by the run's id): `alone()` waits until the tests running on other workers
have ended and holds off new ones meanwhile (a turnstile, so that a stream of shared
tests cannot starve it). Without xdist both are no-ops: one test runs at a time.
Other programs on the machine are not held off (another developer's test run).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _lock_dir() -> Path | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"cfarena-tests-{run}"
    folder.mkdir(exist_ok=True)
    return folder


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def alone() -> Iterator[None]:
    """Hold the host for this test alone among the run's tests."""
    folder = _lock_dir()
    if folder is None:
        yield
        return
    with _flock(folder / "turnstile", fcntl.LOCK_EX), _flock(folder / "host", fcntl.LOCK_EX):
        yield


@contextmanager
def shared() -> Iterator[None]:
    """Share the host with the run's other tests (waiting while one holds it `alone`)."""
    folder = _lock_dir()
    if folder is None:
        yield
        return
    with _flock(folder / "turnstile", fcntl.LOCK_SH):
        pass
    with _flock(folder / "host", fcntl.LOCK_SH):
        yield
