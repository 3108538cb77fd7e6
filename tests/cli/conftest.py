"""Fixtures of the CLI tests: one tournament played for real once per run (per xdist
worker), which the modules that only read a played tournament copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_json


@pytest.fixture(scope="session")
def played_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding one tournament played through `cfarena run-tournament`
    (bots, referee, storage): random and greedy at 2 players, single rounds, the default
    games (1 table x 2 rotations x 2 games). Read a copy (`helpers.copy_played`), never it."""
    tmp = tmp_path_factory.mktemp("played")
    data = run_json("run-tournament", "--bot", "random", "--bot", "greedy", "--players", "2",
                    "--rule", "rounds=single", "--db", f"sqlite:///{tmp / 'cfarena.db'}",
                    cwd=tmp, in_process=True)
    assert data["status"] == "finished"
    return tmp / "cfarena.db"

