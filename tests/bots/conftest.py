"""Fixtures for the sample-bot tests: the in-process match driver of benchmarks/bot_strength.py.

(There is no tests/__init__.py and benchmarks/ is no package, so the driver
module is loaded from its file and handed to tests as a fixture.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bot_strength.py"


def _load() -> ModuleType:
    name = "cfarena_bench_bot_strength"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench() -> ModuleType:
    """benchmarks/bot_strength.py: `play_match`, `IllegalChoiceError`, `run_task`, ..."""
    return _load()
