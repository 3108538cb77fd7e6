"""The random bot replays its choices under `run-tournament --seed` (issue 21), through
the match ids bots see: the same in every run with one seed, distinct per match, and
not the organiser's key."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cfarena.match.bot_ids import wire_match_id

from .helpers import run_json


def _moves(db: Path) -> dict[str, list[str]]:
    """Each match's moves, in order, by match id (the same ids in every run)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select match_id, log from game_logs").fetchall()
    return {match: [a["move"] for a in json.loads(log)["actions"]] for match, log in rows}


def test_the_random_bot_replays_its_choices_under_a_seed(tmp_path: Path) -> None:
    args = ["run-tournament", "--bot", "random", "--bot", "greedy", "--players", "2",
            "--games", "1", "--rule", "rounds=single", "--seed", "11"]
    runs = []
    for name in ("first", "second"):
        run_json(*args, "--db", f"sqlite:///{tmp_path / name}.db", cwd=tmp_path, in_process=True)
        runs.append(_moves(tmp_path / f"{name}.db"))
    assert len(runs[0]) == 2 and all(runs[0].values())
    assert runs[0] == runs[1]


def test_match_ids_hide_the_key_and_the_deal() -> None:
    ids = {wire_match_id(seed, f"t0-g{g}-r{r}") for seed in (1, 2) for g in (0, 1)
           for r in (0, 1)}
    assert len(ids) == 8 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    # the rotations of one deal (one seed) are not linked by a shared part of their ids
    assert wire_match_id(7, "t0-g0-r0")[:4] != wire_match_id(7, "t0-g0-r1")[:4]
    assert wire_match_id(7, "t0-g0-r0") == wire_match_id(7, "t0-g0-r0")
