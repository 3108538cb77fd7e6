"""`cfarena standings --matrix` and a gauntlet's column, in process (Typer's CliRunner) on
a database whose matches are stored as a tournament's workers would store them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cfarena.server.storage import MatchPlan, StoredMatch, open_database

from .helpers import run_in_process

# (deal seed, seats, ranks): a gauntlet of "new" against "old" and "other", one deal
# each, both rotations: new wins both against old, splits against other
DEALS = [
    (101, ("new", "old"), (1, 2)), (101, ("old", "new"), (2, 1)),
    (202, ("new", "other"), (1, 2)), (202, ("other", "new"), (1, 2)),
]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, int]:
    db = open_database(f"sqlite:///{tmp_path / 'cfarena.db'}")
    try:
        names = ("new", "old", "other")
        tid = db.create_tournament("gauntlet", {
            "seed": 1, "players": 2, "games": 1, "rules": {"preset": "standard"},
            "gauntlet": "new", "bots": [{"name": n, "command": "x"} for n in names]})
        ids = db.register_entrants(tid, dict.fromkeys(names, "test"))
        plans = [MatchPlan(f"t{seed}-g0-r{i % 2}", seed, {"preset": "standard"}, 2,
                           [ids[s] for s in seats]) for i, (seed, seats, _) in enumerate(DEALS)]
        for match_id, (_, _, ranks) in zip(db.schedule_matches(tid, plans), DEALS, strict=True):
            lease = db.mark_running(match_id)
            totals = [10 * r for r in ranks]
            db.record_match(StoredMatch(match_id, round_scores=[totals], totals=totals,
                                        ranks=list(ranks), lease=lease))
    finally:
        db.close()
    return tmp_path, tid


def _elo(score: float) -> float:
    return 400 * math.log10(score / (1 - score))


def test_the_matrix_is_row_bot_against_column_bot(recorded: tuple[Path, int]) -> None:
    where, tid = recorded
    result = run_in_process("standings", "-t", str(tid), "--matrix", "--json", cwd=where)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    bots = data["matrix"]["bots"]
    assert bots == [row["bot"] for row in data["standings"]]  # the standings' order
    cell = {(a, b): c for a, row in zip(bots, data["matrix"]["rows"], strict=True)
            for b, c in zip(bots, row, strict=True)}
    assert all(cell[b, b] is None for b in bots)
    assert cell["old", "other"] is None and cell["other", "old"] is None  # never met
    # one deal won twice, and the prior's half deal: (1 + 1/2) / 2
    beat = cell["new", "old"]
    assert (beat["score"], beat["matches"], beat["deals"]) == (0.75, 2, 1)
    assert beat["elo"] == pytest.approx(_elo(0.75), abs=0.05)
    assert beat["elo_low"] < beat["elo"] and beat["elo_high"] is None  # open above
    assert cell["old", "new"]["elo"] == -beat["elo"]
    even = cell["new", "other"]
    assert (even["score"], even["elo"], even["matches"]) == (0.5, 0.0, 2)
    # the gauntlet's column: NEW's cell against each opponent, none against itself
    column = {row["bot"]: row["gauntlet"] for row in data["standings"]}
    assert column["new"] is None
    assert column["old"] == {"new": "new", **beat} and column["other"] == {"new": "new", **even}


def test_the_tables_render_the_same_numbers(recorded: tuple[Path, int]) -> None:
    where, tid = recorded
    result = run_in_process("standings", "-t", str(tid), "--matrix", cwd=where)
    assert result.returncode == 0, result.stderr
    standings, matrix = result.stdout.split(f"Tournament #{tid}: head to head")
    beat = f"{_elo(0.75):+.0f} ["
    assert "new vs it" in standings and beat in standings
    assert "Elo " not in standings.splitlines()[2]  # one rating per bot: no sequential Elo
    assert beat in matrix and f"{-_elo(0.75):+.0f} [" in matrix and "-inf, " in matrix
    assert "0.75, 2 matches" in matrix


def test_matrix_is_refused_with_the_ladder(recorded: tuple[Path, int]) -> None:
    where, _ = recorded
    result = run_in_process("standings", "--ladder", "--matrix", cwd=where)
    assert result.returncode == 2 and "--matrix" in result.stderr
