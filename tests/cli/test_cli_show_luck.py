"""`cfarena show MATCH` shows each seat's luck (in-process, a real SQLite file with a
played match): points, the luck of its draws and the adjusted total, as `sprt.luck`
computes them from the stored game log."""

from __future__ import annotations

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
