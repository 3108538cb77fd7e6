"""`cfarena standings` on a pool prints the ladder as the web page's leaderboard shows
it (in-process, on a real SQLite file): the same rows in the same order (the rating
that ranks them, the check as a place, wins, last seen), revoked bots marked, the
latest faults under the table, readable at 80 columns; `--ladder --json` gives the
rows with their presence as storage knows it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.helpers import run_in_process
from tests.web.leaderboard_data import POOL, fill


def test_the_ladder_table_is_the_leaderboard(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    fill(db)
    listed = run_in_process("standings", "--pool", POOL, "--ladder", "--json", "--db", db,
                            cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    ratings = [r["rating"] for r in rows]
    assert ratings == sorted(ratings, reverse=True)
    assert ratings == [round(r["skill_elo"]) for r in rows]
    assert sorted(r["check_rank"] for r in rows) == [1, 2, 3, 4]
    by_bot = {r["bot"]: r for r in rows}
    assert [b for b, r in by_bot.items() if r["revoked"]] == ["dave"]
    assert all(r["connected"] is None and r["waiting_for"] is None for r in rows)
    assert by_bot["carol"]["last_error"]["kind"] == "timeout"
    assert "erin" not in by_bot  # never played; who is connected only the arena knows
    shown = run_in_process("standings", "--pool", POOL, "--db", db, cwd=tmp_path,
                           env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    table = [line.split() for line in lines if line[:1].isdigit()]
    assert [(t[0], t[1], *re.findall(r" (\d+) +(#\d+) ", line)) for t, line in zip(
        table, [line for line in lines if line[:1].isdigit()], strict=True)] == [
        (str(r["rank"]), r["bot"], (str(r["rating"]), f"#{r['check_rank']}")) for r in rows]
    assert table[[t[1] for t in table].index("dave")][-1] == "revoked"
    assert "last error of carol: timeout at" in shown.stdout
    assert "Bradley-Terry fit over all results" not in shown.stdout  # one table, one order
