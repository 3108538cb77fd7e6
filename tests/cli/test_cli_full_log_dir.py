"""A full --log-dir (issue 21): the run goes on, says so in one warning line, leaves no
empty or cut-off seat-log file there, and every seat's output is stored all the same."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from .helpers import run_cli


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_log_dir_is_reported_once_and_the_output_stored(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        filler = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill it: the next write fails
            with pytest.raises(OSError):
                while True:
                    os.write(filler, b"\0" * 4096)
        finally:
            os.close(filler)
        db = tmp_path / "cfarena.db"
        result = run_cli("run-tournament", "--bot", "random", "--bot", "greedy", "--players",
                         "2", "--games", "2", "--rule", "rounds=single", "--json",
                         "--log-dir", str(full / "logs"), "--db", f"sqlite:///{db}",
                         cwd=tmp_path)
        left = sorted(p.name for p in (full / "logs").iterdir())
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert result.returncode == 0, result.stderr[-2000:]
    warnings = [line for line in result.stderr.splitlines() if "--log-dir" in line]
    assert len(warnings) == 1, result.stderr
    assert "No space left on device" in warnings[0] and "still stored" in warnings[0]
    assert left == []  # no empty file that looks like a bot that printed nothing
    with sqlite3.connect(db) as conn:
        sizes = [n for (n,) in conn.execute("select length(output) from seat_logs")]
    assert len(sizes) == 8 and min(sizes) > 0  # 4 matches x 2 seats, each output kept
