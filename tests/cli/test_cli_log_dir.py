"""--log-dir keeps tournaments apart: each seat's file is named by its match id
(T<tournament>-<key>), so a second tournament into the same directory never overwrites
the first's. Real runs: the files are written by the tournament's own processes."""

from __future__ import annotations

from pathlib import Path

from .helpers import run_cli

RUN = ["run-tournament", "--bot", "random", "--bot", "greedy", "--players", "2",
       "--games", "1", "--rule", "rounds=single", "--log-dir", "logs", "--json"]


def test_a_second_tournament_keeps_the_first_ones_seat_logs(tmp_path: Path) -> None:
    first = run_cli(*RUN, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    kept = {p.name: p.read_bytes() for p in (tmp_path / "logs").iterdir()}
    # 2 rotations of one deal x 2 seats, each file named by its match of tournament 1
    assert len(kept) == 4 and all(name.startswith("T1-") for name in kept), sorted(kept)
    second = run_cli(*RUN, "--new", cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    now = {p.name: p.read_bytes() for p in (tmp_path / "logs").iterdir()}
    assert {name: now[name] for name in kept} == kept
    assert sorted(set(now) - set(kept)) == sorted(name.replace("T1-", "T2-", 1)
                                                  for name in kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfarena.db", "logs"]  # no strays
