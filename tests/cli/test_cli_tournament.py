"""`cfarena run-tournament` end to end, through the CLI as a subprocess (the presets and
table sizes in-process: Typer's CliRunner, with sandboxed bots)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from math import comb
from pathlib import Path

import pytest

from .helpers import (
    CFARENA,
    as_in_a_terminal,
    count_fork_servers,
    marker,
    processes_with_marker,
    run_cli,
    run_in_process,
    run_json,
    wait_no_processes,
)


def _expected_matches(bots: int, players: int, games: int) -> int:
    tables = comb(bots, players) if bots >= players else 1
    return tables * players * games


@pytest.mark.long
def test_default_run_with_no_arguments(tmp_path: Path) -> None:
    mark = marker()
    # montecarlo's budget, from the organiser's environment: 2 ms a decision, not 50
    # (at 50 its search kept both cores busy for the run's 20 s)
    result = run_cli("run-tournament", cwd=tmp_path,
                     env={"CFARENA_TEST_MARK": mark, "CFARENA_MC_BUDGET_MS": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "cfarena.db").exists()
    for bot in ("random", "greedy", "smart", "montecarlo"):
        assert bot in result.stdout
    assert "Tournament #1" in result.stdout
    assert "8/8" in result.stderr  # the progress bar reached the end
    assert wait_no_processes(mark, tmp_path) == []
    # everything went to the database
    with sqlite3.connect(tmp_path / "cfarena.db") as db:
        rows = db.execute("select status, count(*) from matches group by status").fetchall()
        logs = db.execute("select count(*) from game_logs").fetchone()[0]
    assert rows == [("finished", 8)] and logs == 8
    # the budget reached the bundled montecarlo's sandboxed processes and is part of the
    # tournament: at 50 ms, over two thirds of its answers took 40 ms or more
    with sqlite3.connect(tmp_path / "cfarena.db") as db:
        config = json.loads(db.execute("select config from tournaments").fetchone()[0])
        answers = [ms for (ms,) in db.execute(
            "select json_extract(a.value, '$.ms') from game_logs g, "
            "json_each(json_extract(g.log, '$.actions')) a "
            "where json_extract(a.value, '$.ms') is not null "
            "and json_extract(a.value, '$.seat') = (select key from "
            "json_each(json_extract(g.log, '$.seats')) where value = 'montecarlo')")]
    assert [b.get("settings") for b in config["bots"]] == [
        None, None, None, {"CFARENA_MC_BUDGET_MS": "2"}]
    assert len(answers) > 100 and sum(ms < 40 for ms in answers) >= 0.8 * len(answers), \
        sorted(answers)[len(answers) // 2]


_SMALL = [(2, ["random", "greedy", "smart"]), (4, ["random", "greedy", "smart", "random2"])]


# every preset at 2 and 4 players; 8-player tables (8 matches of 8 seats) once, for the
# suite's time: the leak harness plays every preset at 8 players in process
@pytest.mark.parametrize(("preset", "players", "bots"), [
    *[(preset, players, bots) for preset in ("standard", "maltese", "trains")
      for players, bots in _SMALL],
    pytest.param("trains", 8, ["random", "greedy"], marks=pytest.mark.long),
])
def test_presets_and_table_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 preset: str, players: int, bots: list[str]) -> None:
    servers = count_fork_servers(monkeypatch)
    args = ["run-tournament", "--rules", preset, "--players", str(players),
            "--rule", "rounds=single", "--concurrency", "3", "--games", "1"]
    for b in bots:
        args += ["--bot", b if b != "random2" else "random2=python -m cfarena.sdk run "
                 "cfarena.bots.random_bot"]
    if len(bots) < players:  # one bot holds several seats of the table: only when asked
        args.append("--fill")
    data = run_json(*args, cwd=tmp_path, in_process=True)  # no process behaviour under test
    assert data["status"] == "finished"
    assert data["matches"] == _expected_matches(len(bots), players, 1)
    names = {row["bot"] for row in data["standings"]}
    assert names == set(bots)
    seats = sum(row["matches"] for row in data["standings"])
    # every match seats `players` seats; a bot filling several seats counts the match once
    if len(bots) >= players:
        assert seats == data["matches"] * players
    else:
        assert all(row["matches"] == data["matches"] for row in data["standings"])
    assert all(row["faults"] == 0 for row in data["standings"])
    # no fork server is started that cannot be used: each phase's matches (a rotation of
    # every table, at most 3) all play at once, so no server can serve two seats, and a
    # server that forked never outlives its phase: one server per seat, each forked
    # (the start's check forks a child in a server of the first phase: one fork more
    # per bot)
    assert len(servers) == data["matches"] * players, [s.label for s in servers]
    assert [s.label for s in servers if s._forks == 0] == []
    assert sum(s._forks for s in servers) == data["matches"] * players + len(bots)


def test_postgresql_database(tmp_path: Path, pg_cluster: object) -> None:
    url = pg_cluster.create_database("cli_run")  # type: ignore[attr-defined]
    args = ["run-tournament", "--bot", "random", "--bot", "greedy", "--players", "2",
            "--rule", "rounds=2", "--games", "1", "--db", url]
    data = run_json(*args, cwd=tmp_path)
    assert data["matches"] == 2 and data["status"] == "finished"
    standings = run_json("standings", "--tournament", str(data["tournament_id"]), "--db", url,
                         cwd=tmp_path, in_process=True)
    assert {r["bot"] for r in standings} == {"random", "greedy"}  # type: ignore[union-attr]
    listed = run_json("matches", "--db", url, cwd=tmp_path, in_process=True)
    assert len(listed) == 2  # type: ignore[arg-type]


def _count(db: Path, status: str) -> int:
    with sqlite3.connect(db) as conn:
        try:
            return int(conn.execute("select count(*) from matches where status = ?",
                                    (status,)).fetchone()[0])
        except sqlite3.OperationalError:  # the schema is not created yet
            return 0


def _finished_rows(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute(
            "select id, finished_at from matches where status = 'finished'").fetchall())


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM],
                         ids=["kill-9", "ctrl-c", "sigterm"])
def test_resume_after_interruption(tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "cfarena.db"
    args = ["run-tournament", "--bot", "random", "--bot", "greedy", "--bot", "smart",
            "--players", "2", "--games", "2", "--rule", "rounds=3", "--concurrency", "1",
            "--db", f"sqlite:///{db}"]
    total = _expected_matches(3, 2, 2)  # 12: the kill comes after 3, the resume plays the rest
    mark = marker()
    proc = subprocess.Popen([CFARENA, *args], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, CFARENA_TEST_MARK=mark),
                            preexec_fn=as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if db.exists() and _count(db, "finished") >= 3:
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        sent = time.monotonic()
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr, stderr
    if sig != signal.SIGKILL:  # Ctrl-C and SIGTERM: the same, but for the exit status
        assert proc.returncode == (130 if sig == signal.SIGINT else 143)
        assert took < 5.0, f"run-tournament took {took:.1f} s to stop"
        assert "interrupted: finished matches are stored" in stderr
        # the cut match was stored as aborted, not left running
        assert _count(db, "running") == 0
    # no bot process outlives the referee, even after kill -9
    assert wait_no_processes(mark, tmp_path) == [], processes_with_marker(mark)
    before = _finished_rows(db)
    assert 3 <= len(before) < total

    data = run_json(*args, cwd=tmp_path, in_process=True)  # (what was cut: the process)
    assert data["resumed"] is True
    assert data["matches"] == total
    assert data["played_now"] == total - len(before)
    after = _finished_rows(db)
    assert len(after) == total
    # nothing finished before was lost or played again
    assert all(after[mid] == stamp for mid, stamp in before.items())
    assert sum(r["matches"] for r in data["standings"]) == total * 2


def test_a_gauntlet_plays_only_new_s_tables_and_an_edited_bot_starts_anew(
        tmp_path: Path) -> None:
    """`--gauntlet NEW`: only the tables with NEW are played (each in both rotations), the
    standings show NEW's head-to-head Elo against each opponent; the same command after
    NEW's file changed plays a new tournament and says whose files changed."""
    bot = tmp_path / "mine.py"
    bot.write_text("from cfarena.sdk import Bot\n\nclass First(Bot):\n"
                   "    def choose(self, turn):\n        return turn.legal_moves[0]\n")
    args = ["run-tournament", "--bot", "mine=python -m cfarena.sdk run mine.py:First",
            "--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
            "--rule", "rounds=single", "--gauntlet", "mine", "--json"]
    first = run_json(*args, cwd=tmp_path, in_process=True)
    assert (first["status"], first["matches"]) == ("finished", 2 * 2)  # 2 tables, 2 rotations
    with sqlite3.connect(tmp_path / "cfarena.db") as conn:
        seated = conn.execute(
            "select m.id, group_concat(b.name) from matches m join match_seats s on "
            "s.match_id = m.id join bots b on b.id = s.bot_id group by m.id").fetchall()
    assert len(seated) == 4 and all("mine" in names.split(",") for _, names in seated)
    assert sorted(sorted(n.split(",")) for _, n in seated) == [
        ["greedy", "mine"], ["greedy", "mine"], ["mine", "random"], ["mine", "random"]]
    column = {row["bot"]: row["gauntlet"] for row in first["standings"]}
    assert column["mine"] is None
    for opponent in ("random", "greedy"):
        assert column[opponent]["new"] == "mine" and column[opponent]["matches"] == 2
    again = run_json(*args, cwd=tmp_path, in_process=True)
    assert again["already_finished"] and again["tournament_id"] == first["tournament_id"]
    bot.write_text(bot.read_text() + "# v2\n")
    edited = run_in_process(*args, cwd=tmp_path)
    assert edited.returncode == 0, edited.stderr[-3000:]
    [note] = [line for line in edited.stderr.splitlines() if "changed since" in line]
    assert note == (f"the files of bot mine (mine.py) changed since tournament "
                    f"#{first['tournament_id']}: a new tournament starts (`--resume "
                    f"{first['tournament_id']}` is refused)")
    data = json.loads(edited.stdout)
    assert data["tournament_id"] != first["tournament_id"] and data["played_now"] == 4
