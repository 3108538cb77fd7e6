"""Game logs played in-process (no referee, no database) for the replay tests."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from cfarena.server.replay.simulate import simulate_log

# (preset, players, seed, timeouts): every preset, several player counts; some
# matches have a timed-out seat that forfeits (faults and fallback moves)
CASES = [
    ("standard", 4, 11, (3,)),
    ("standard", 2, 12, ()),
    ("standard", 7, 13, ()),
    ("maltese", 3, 21, (5,)),
    ("maltese", 8, 22, ()),
    ("trains", 2, 31, ()),
    ("trains", 5, 32, (2,)),
]
IDS = [f"{p}-{n}p" for p, n, _, _ in CASES]


@cache
def _log(preset: str, players: int, seed: int, timeouts: tuple[int, ...]) -> dict[str, Any]:
    return simulate_log({"preset": preset}, players, seed, timeouts=timeouts)


def make_log(
    preset: str, players: int, seed: int, timeouts: tuple[int, ...] = ()
) -> dict[str, Any]:
    """A fresh deep copy (tests may tamper with it)."""
    return copy.deepcopy(_log(preset, players, seed, timeouts))


@pytest.fixture(params=CASES, ids=IDS)
def case_log(request: pytest.FixtureRequest) -> dict[str, Any]:
    return make_log(*request.param)
