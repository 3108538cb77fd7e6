"""`tournaments create` (which starts no bot) in process: `--fill` says in one line which
bot holds several seats, and `--gauntlet NEW` schedules only NEW's tables."""

from __future__ import annotations

import json
from pathlib import Path

from cfarena.server.storage import open_database

from .helpers import run_in_process

THREE = ["--bot", "random", "--bot", "greedy", "--bot", "smart"]


def test_fill_says_which_bot_holds_two_seats(tmp_path: Path) -> None:
    refused = run_in_process("tournaments", "create", *THREE, cwd=tmp_path)
    assert refused.returncode == 2 and "--fill" in refused.stderr
    created = run_in_process("tournaments", "create", *THREE, "--fill", "--json", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    # one line (a machine without a defence may add its own lines: not this one's)
    [line] = [line for line in created.stderr.splitlines() if "bots at" in line]
    assert line == ("--fill: 3 bots at 4-seat tables: random greedy smart random "
                    "(random 2 seats of every match)")
    assert json.loads(created.stdout)["matches"] == 4 * 2  # one table, 4 rotations, 2 games


def test_a_gauntlet_schedules_only_new_s_tables(tmp_path: Path) -> None:
    created = run_in_process("tournaments", "create", *THREE, "--bot", "montecarlo",
                             "--players", "3", "--gauntlet", "smart", "--json", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    tid = json.loads(created.stdout)["tournament_id"]
    with open_database(f"sqlite:///{tmp_path / 'cfarena.db'}") as db:
        info = db.get_tournament(tid)
        seated = [[s.bot_name for s in m.seats] for m in db.list_matches(tid, limit=None)]
    assert info is not None and info.config["gauntlet"] == "smart"
    assert info.name == "standard 3p gauntlet of smart"
    # C(3, 2) tables with smart, 3 rotations, 2 games; never the field alone
    assert len(seated) == 3 * 3 * 2 and all("smart" in seats for seats in seated)
    assert {frozenset(s) for s in seated} == {
        frozenset({"smart", a, b}) for a, b in
        (("random", "greedy"), ("random", "montecarlo"), ("greedy", "montecarlo"))}
