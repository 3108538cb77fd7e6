"""The arena caches the bytecode of what a fork server runs (`forks.cache_bytecode`):
the sandbox shows the SDK read-only, so a fork server could not cache it itself and
would compile its modules from source at every start. Nothing is run, and nothing is
written where Python writes no bytecode."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from cfarena.server.sandbox import LimitWatch, python_paths
from cfarena.server.tournament import forks


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module on the path whose import would fail loudly, and where its .pyc goes."""
    name = f"fork_bytecode_probe_{tmp_path.name}"
    source = tmp_path / f"{name}.py"
    source.write_text("raise RuntimeError('run, not only compiled')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    forks.cache_bytecode.cache_clear()
    return name, Path(importlib.util.cache_from_source(str(source)))


def test_the_bytecode_is_written_and_the_module_not_run(
        module: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    name, pyc = module
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    forks.cache_bytecode(name)
    assert pyc.is_file()
    assert name not in sys.modules
    # what it wrote is what the import system takes as fresh
    spec = importlib.util.find_spec(name)
    assert spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert spec.loader.get_code(name) is not None
    assert pyc.read_bytes()[:4] == importlib.util.MAGIC_NUMBER


def test_nothing_is_written_where_python_writes_no_bytecode(
        module: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    name, pyc = module
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    forks.cache_bytecode(name)
    assert not pyc.exists()


def test_a_corrupt_bytecode_file_is_left_to_the_fork_server_to_report(
        module: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A .pyc with a valid header and a cut body (marshal: EOFError) raises nothing here:
    caching is best effort, and the fork server reports what it cannot import."""
    name, pyc = module
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    forks.cache_bytecode(name)
    pyc.write_bytes(pyc.read_bytes()[:20])
    spec = importlib.util.find_spec(name)
    assert spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    with pytest.raises(EOFError):  # what the import system itself makes of it
        spec.loader.get_code(name)
    forks.cache_bytecode.cache_clear()
    forks.cache_bytecode(name)  # no exception
    assert name not in sys.modules


def test_a_fork_server_caches_its_module_and_preloaded_bots_before_it_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real sandboxed fork server: its start caches the bytecode of the fork server's
    module and of the bundled bot it preloads, before the sandbox (which cannot) runs."""
    cached: list[str] = []
    real = forks.cache_bytecode

    def recorded(module: str) -> None:
        cached.append(module)
        real(module)

    monkeypatch.setattr(forks, "cache_bytecode", recorded)

    async def start_and_stop() -> bool:
        watch = LimitWatch()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp",
               "LANG": "C.UTF-8"}
        server = forks.ForkServer("probe", "probe#fork", env, watch, binds=python_paths(),
                                  workdir=tmp_path, preload=("cfarena.bots.greedy",))
        try:
            await server.start(60.0)
            return server.alive
        finally:
            await server.stop()
            await watch.close()

    assert asyncio.run(start_and_stop())
    assert cached == [forks.MODULE, "cfarena.bots.greedy"]
