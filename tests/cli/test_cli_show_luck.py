"""`cfarena show MATCH` shows each seat's luck (in-process, a real SQLite file with a
played match): points, the luck of its draws and the adjusted total, as `sprt.luck`
computes them from the stored game log."""

from __future__ import annotations

from pathlib import Path

from cfarena.server.sprt.luck import log_luck
from cfarena.server.storage import open_database

from .helpers import one_match_database, run_in_process


def test_show_prints_each_seats_luck_from_the_log(tmp_path: Path) -> None:
    url = one_match_database(tmp_path / "arena.db")
    with open_database(url) as db:
        log = db.get_log("m1")
        detail = db.get_match("m1")
    assert log is not None and detail is not None
    luck = log_luck(log)
    assert any(abs(c) >= 0.05 for c in luck)  # the match had draws that count
    result = run_in_process("show", "m1", "--db", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "luck of the draws" in text
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
            for line in text[text.index("luck of the draws"):].splitlines()
            if line.count("│") >= 6 and line.split("│")[1].strip().isdigit()}
    for s in detail.match.seats:
        assert rows[str(s.seat)] == [s.bot_name, str(s.total), f"{luck[s.seat]:+.1f}",
                                     f"{s.total + luck[s.seat]:.1f}"], rows
