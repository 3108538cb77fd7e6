"""The starter kits of starters/, built once per test session into a temporary
directory (as their READMEs say, from a copy of the kit's committed files): the Node.js
kit with `npm ci` and `npm run build`, the Go kit with `build.sh` from Debian's
packages (.ci/run installs both toolchains)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.processes import kill

REPO = Path(__file__).resolve().parents[2]
STARTERS = REPO / "starters"
BUILD_TIMEOUT_S = 600  # a Go build compiles gRPC from Debian's sources: ~1 min on a cold cache


def _tracked_copy(kit: str, into: Path) -> Path:
    """The kit's committed files (what an entrant copies), in `into`/`kit`."""
    files = subprocess.run(["git", "ls-files", "-z", kit], cwd=STARTERS, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(STARTERS / name, target)
    return into / kit


def _build(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    """Run one build step; its output in the failure if it fails."""
    proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BUILD_TIMEOUT_S)
    finally:
        kill(proc)  # its process group, if the step timed out (or the test was stopped)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{out.decode()[-3000:]}"


@pytest.fixture(scope="session")
def node_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Node.js kit's directory, ready to run: `node DIR/bot.js`."""
    kit = _tracked_copy("node", tmp_path_factory.mktemp("kits"))
    _build(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], kit)
    _build(["npm", "run", "build", "--", str(REPO / "proto")], kit)
    return kit


@pytest.fixture(scope="session")
def go_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go kit's build directory: DIR/cfarena-greedy is the bot."""
    kit = _tracked_copy("go", tmp_path_factory.mktemp("kits"))
    out = kit / "build"
    _build(["sh", "build.sh", str(REPO / "proto")], kit, env={"OUT": str(out)})
    return out
