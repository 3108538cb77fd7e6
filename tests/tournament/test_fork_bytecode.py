"""The arena caches the bytecode of what a fork server runs (`forks.cache_bytecode`):
the sandbox shows the SDK read-only, so a fork server could not cache it itself and
would compile its modules from source at every start. Nothing is run, and nothing is
written where Python writes no bytecode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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
