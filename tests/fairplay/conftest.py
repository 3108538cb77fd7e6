"""The session's hostile-bot tournaments (see arena.py); bubblewrap is required."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from cfarena.server.sandbox import sandbox_problem
from tests.fairplay.arena import Arena


@pytest.fixture(scope="session")
def arena(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Arena]:
    """Starts, all at once, the scenarios named by the selected tests' modules (`SCENARIOS`)."""
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap (bubblewrap) is not installed: the fair-play suite attacks the "
                    "sandbox and cannot run without it (Debian/Ubuntu: apt-get install "
                    "bubblewrap; .ci/run installs it)", pytrace=False)
    problem = sandbox_problem()
    if problem is not None:
        pytest.fail(f"the sandbox cannot be created here: {problem}", pytrace=False)
    wanted: set[str] = set()
    for item in request.session.items:
        wanted.update(getattr(getattr(item, "module", None), "SCENARIOS", ()))
    runs = Arena(tmp_path_factory.mktemp("fairplay"), wanted)
    yield runs
    runs.close()
