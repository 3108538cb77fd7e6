"""`cfarena show MATCH` shows each seat's luck (in-process, a real SQLite file with a
played match): points, the luck of its draws and the adjusted total, as `sprt.luck`
computes them from the stored game log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .helpers import one_match_luck, run_in_process


def test_show_prints_each_seats_luck_from_the_log(tmp_path: Path) -> None:
    url, seats, luck = one_match_luck(tmp_path / "arena.db")
    assert any(abs(c) >= 0.05 for c in luck)  # the match had draws that count
    result = run_in_process("show", "m1", "--db", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "luck of the draws" in text
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
            for line in text[text.index("luck of the draws"):].splitlines()
            if line.count("│") >= 6 and line.split("│")[1].strip().isdigit()}
    for seat, (bot, total) in seats.items():
        assert rows[str(seat)] == [bot, str(total), f"{luck[seat]:+.1f}",
                                   f"{(total or 0) + luck[seat]:.1f}"], rows


def test_show_of_a_match_whose_log_is_corrupt_shows_the_rest_and_says_why(
        tmp_path: Path) -> None:
    url, seats, _luck = one_match_luck(tmp_path / "arena.db")
    with sqlite3.connect(tmp_path / "arena.db") as conn:  # tampered with after storing
        conn.execute("UPDATE game_logs SET sha256 = ? WHERE match_id = 'm1'", ("0" * 64,))
    result = run_in_process("show", "m1", "--db", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "luck of the draws" not in result.stdout
    assert "luck: not computed (game log of match 'm1' is corrupt (sha256 mismatch))" \
        in " ".join(result.stdout.split())
    assert all(bot in result.stdout for bot, _total in seats.values())
