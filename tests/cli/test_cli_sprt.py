"""`cfarena sprt` and `cfarena sprt-tests`: usage errors in-process; real tests with
sandboxed bots (decides, resumes after a Ctrl-C of the CLI as a subprocess, a bot
against itself does not accept H1), in-process where no process behaviour is tested."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from cfarena.server.bundled_bots import bundled_command
from cfarena.server.tournament.forks import ForkServer
from tests.harness.slow_bots import slow_bot

from .helpers import (
    cli_process,
    count_fork_servers,
    marker,
    processes_with_marker,
    run_in_process,
    wait_no_processes,
)

# quick bounds for a big gap, as an author would pick them: logistic Elo [0, 100],
# 2-player tables (2 matches per deal group), single rounds; a fixed seed (the same
# deals on every run: no run of the suite is the unlucky one in twenty)
QUICK = ["--players", "2", "--rule", "rounds=single", "--elo-model", "logistic",
         "--elo1", "100", "--concurrency", "8", "--seed", "7"]
EXIT = {"H1": 0, "H0": 1, "inconclusive": 3}


@pytest.mark.parametrize(("args", "says"), [
    (["smart", "smart"], "NEW and OLD must have different names"),
    (["smart", "nosuch"], "OLD nosuch: no bundled bot of that name"),
    (["smart", "x="], "OLD x=: the command is empty"),
    (["nosuch", "smart"], "NEW nosuch: no bundled bot of that name"),
    (["smart", "greedy", "--players", "3", "--field", "nosuch"],
     "--field nosuch: no bundled bot of that name"),
    (["smart", "greedy", "--elo0", "5", "--elo1", "5"], "elo0 must be below elo1"),
    (["smart", "greedy", "--alpha", "0.7"], "alpha must be between 0 and 0.5"),
    (["smart", "greedy", "--players", "9"], "--players must be 2-8"),
    (["smart", "greedy", "--players", "2", "--field", "random"], "has no other seats"),
    (["smart", "greedy", "--field", "smart"], "differ from NEW and OLD"),
    (["smart", "greedy", "--players", "3", "--field", "random", "--field", "montecarlo"],
     "2 bots for the 1 other seats"),
    (["smart", "greedy", "--max-matches", "7"], "--max-matches must be at least 8"),
    (["smart", "greedy", "--players", "2", "--max-matches", "1"],
     "--max-matches must be at least 2"),
    (["smart", "greedy", "--score", "luck"], "'luck' is not one of"),
    (["smart", "greedy", "--elo-model", "bayes"], "'bayes' is not one of"),
    (["smart", "greedy", "--seed", "-1"], "--seed must be a whole number"),
    (["smart", "greedy", "--rule", "rounds"], "--rule expects KEY=VALUE"),
    (["smart", "greedy", "--timeout-ms", "0"], "--timeout-ms must be at least 1"),
    (["smart", "greedy", "--concurrency", "0"], "--concurrency must be at least 1"),
    (["smart", "greedy", "--queue-only"], "--queue-only needs PostgreSQL"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                                says: str) -> None:
    result = run_in_process("sprt", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cfarena.db").exists()  # refused before the database


def test_listing_tests_of_no_database_is_one_line(tmp_path: Path) -> None:
    result = run_in_process("sprt-tests", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def _finished(db: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(db) as conn:
            return dict(conn.execute(
                "select id, finished_at from matches where status = 'finished'").fetchall())
    except sqlite3.OperationalError:  # the schema is not created yet
        return {}


@pytest.mark.long
def test_smart_beats_greedy_resumes_after_ctrl_c_and_is_then_reported(tmp_path: Path
                                                                     ) -> None:
    db = tmp_path / "cfarena.db"
    # smart's moves 30 ms apart (the same moves, the same verdict): the Ctrl-C below,
    # sent once 5 matches are stored, lands while the test is undecided on any machine
    smart = f"smart={slow_bot(tmp_path, 'smart', 0.03)}"
    args = ["sprt", smart, "greedy", *QUICK, "--max-matches", "200", "--json",
            "--db", f"sqlite:///{db}"]
    mark = marker()
    with cli_process(*args, cwd=tmp_path, mark=mark) as proc:
        deadline = time.monotonic() + 120
        while len(_finished(db)) < 5 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        _out, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "run the same command again to resume" in stderr
    assert wait_no_processes(mark, tmp_path) == [], processes_with_marker(mark)
    before = _finished(db)
    assert len(before) >= 5

    resumed = run_in_process(*args, cwd=tmp_path)  # (the Ctrl-C was the process's)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    data = json.loads(resumed.stdout)
    assert data["resumed"] is True
    assert data["verdict"] == "H1" and data["llr"] >= data["llr_upper"]
    assert data["matches"] == 2 * data["groups"] <= 200
    assert data["elo"]["low"] > 0 and data["los"] > 0.95
    after = _finished(db)
    # what was stored before the Ctrl-C is kept, not played again
    assert {k: after[k] for k in before} == before
    assert len(after) == len(before) + data["played_now"]
    assert data["matches"] <= len(after)  # counted groups are stored matches

    again = run_in_process(*args, cwd=tmp_path)  # plays nothing (`played_now`)
    assert again.returncode == 0, again.stderr[-3000:]
    repeat = json.loads(again.stdout)
    assert repeat["already_finished"] is True and repeat["played_now"] == 0
    assert (repeat["verdict"], repeat["matches"], repeat["llr"]) == \
        (data["verdict"], data["matches"], data["llr"])
    assert _finished(db) == after

    listed = json.loads(run_in_process("sprt-tests", "--json", "--db", f"sqlite:///{db}",
                                       cwd=tmp_path).stdout)
    assert [(t["new"], t["old"], t["state"], t["verdict"], t["matches"]) for t in listed] \
        == [("smart", "greedy", "finished", "H1", data["matches"])]
    # its matches are stored matches: shown like any other
    shown = run_in_process("show", f"T{data['tournament_id']}-g0-s0", "--db",
                           f"sqlite:///{db}", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr


def test_a_bot_against_itself_does_not_accept_h1_and_a_cap_is_inconclusive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    greedy = " ".join(bundled_command("greedy"))
    servers = count_fork_servers(monkeypatch)
    # (greedy plays the same moves in the same position: every group scores 1/2, and
    # [0, 150] accepts H0 after 6 groups, one batch of --concurrency 6)
    result = run_in_process("sprt", f"greedy-a={greedy}", f"greedy-b={greedy}", *QUICK,
                            "--elo1", "150", "--concurrency", "6", "--max-matches", "60",
                            "--json", "--db", f"sqlite:///{tmp_path / 'c.db'}", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert data["verdict"] in ("H0", "inconclusive"), data
    assert result.returncode == EXIT[data["verdict"]]
    assert data["matches"] <= 60
    _one_fork_server_per_seat(servers, data["played_now"])
    servers.clear()

    # a cap that is not a whole number of groups is rounded down to one: inconclusive
    capped = run_in_process("sprt", f"greedy-a={greedy}", f"greedy-b={greedy}", *QUICK,
                            "--max-matches", "5", "--json", "--db",
                            f"sqlite:///{tmp_path / 'c.db'}", cwd=tmp_path)
    data = json.loads(capped.stdout)
    assert (capped.returncode, data["verdict"], data["matches"]) == (3, "inconclusive", 4)
    # one batch of 2 groups, though --concurrency 8 would take 8: each phase (a seating
    # of both deals) has 2 matches, and no server is started that it cannot use
    assert data["played_now"] == 4
    _one_fork_server_per_seat(servers, 4)
    servers.clear()

    # two batches of 2 groups (8 matches: the cap, or H0 at its last group): the
    # second batch's seats are added as it is scheduled (`TournamentPlayer.schedule`),
    # counted once, so its servers are started ahead and again one per seat
    batches = run_in_process("sprt", f"greedy-a={greedy}", f"greedy-b={greedy}", *QUICK,
                             "--elo1", "150", "--concurrency", "2", "--max-matches", "8",
                             "--json", "--db", f"sqlite:///{tmp_path / 'd.db'}", cwd=tmp_path)
    data = json.loads(batches.stdout)
    assert data["verdict"] in ("H0", "inconclusive") and data["matches"] == 8, data
    assert data["played_now"] == 8
    _one_fork_server_per_seat(servers, 8)


def _one_fork_server_per_seat(servers: list[ForkServer], matches: int) -> None:
    """No fork server was started that could not be used: a bot test's phase is one
    seating of each deal of a batch, all played at once, so no server serves two seats,
    and a server that forked never outlives its phase: one server per seat (2 a match),
    each forked (the start's check forks a child in a server of the first phase: one
    fork more per bot)."""
    assert len(servers) == 2 * matches, [s.label for s in servers]
    assert [s.label for s in servers if s._forks == 0] == []
    assert sum(s._forks for s in servers) == 2 * matches + 2
