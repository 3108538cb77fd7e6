"""`run-tournament` and its sandbox, seeds and per-seat output, through the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from cfarena.server.storage import open_database
from tests.harness.sandboxes import run_sandboxes

from .helpers import CFARENA, run_cli, run_in_process, run_json

TINY = ["--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
        "--rule", "rounds=single"]


def _config(db: Path, tournament_id: int) -> dict[str, object]:
    with open_database(f"sqlite:///{db}") as database:
        info = database.get_tournament(tournament_id)
    assert info is not None
    return info.config


def test_without_bubblewrap_the_run_refuses_in_one_line_and_writes_nothing(tmp_path: Path
                                                                           ) -> None:
    bare = tmp_path / "bin"  # a PATH with python and cfarena but no bwrap
    bare.mkdir()
    for tool in ("cfarena", "python", "python3"):
        (bare / tool).symlink_to(Path(sys.executable).with_name(tool))
    result = run_cli("run-tournament", *TINY, cwd=tmp_path, env={"PATH": str(bare)})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: no sandbox: bwrap not found; install bubblewrap (Debian/Ubuntu: "
        "`apt-get install bubblewrap`), or pass --no-sandbox to run trusted bots unsandboxed")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cfarena.db").exists()


def test_sandboxed_run_stores_each_seats_output_and_an_unpredictable_seed(tmp_path: Path
                                                                        ) -> None:
    first = run_json("run-tournament", *TINY, cwd=tmp_path)
    assert first["status"] == "finished" and first["matches"] == 2
    assert run_sandboxes(tmp_path, zombies=False) == []
    db = tmp_path / "cfarena.db"
    config = _config(db, first["tournament_id"])
    assert config["sandbox"] == {"memory_mib": 512, "cpu_seconds": 300, "processes": 64}
    assert config["seed_fixed"] is False
    with open_database(f"sqlite:///{db}") as database:
        matches = database.list_matches(first["tournament_id"])
        assert len(matches) == 2
        for match in matches:
            logs = database.seat_logs(match.id)
            assert [log.seat for log in logs] == [0, 1]
            for log in logs:
                # the SDK's own log lines, from inside the sandbox
                assert "connected to unix:/run/cfarena/arena.sock" in log.output
                assert log.output_bytes == len(log.output.encode())
                # its stream was ended after its MatchEnd and it exited by itself
                assert log.exit is not None
                assert log.exit.startswith("exited with code 0: "), log.exit
                assert "the referee closed the stream; stopping" in log.output
    # the same command once more reports the finished tournament, plays nothing
    again = run_json("run-tournament", *TINY, cwd=tmp_path, in_process=True)
    assert again["tournament_id"] == first["tournament_id"]
    assert again["played_now"] == 0 and again["already_finished"] is True
    # --new plays another, and without --seed its seed is drawn afresh
    second = run_json("run-tournament", *TINY, "--new", cwd=tmp_path, in_process=True)
    assert second["tournament_id"] != first["tournament_id"]
    seeds = [_config(db, t["tournament_id"])["seed"] for t in (first, second)]
    assert seeds[0] != seeds[1]
    with sqlite3.connect(db) as conn:
        deal_seeds = conn.execute("select tournament_id, seed from matches").fetchall()
    assert {s for t, s in deal_seeds if t == first["tournament_id"]}.isdisjoint(
        {s for t, s in deal_seeds if t == second["tournament_id"]})


def test_a_fixed_seed_reproduces_the_deals(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        where = tmp_path / name
        where.mkdir()
        data = run_json("run-tournament", *TINY, "--seed", "42", cwd=where, in_process=True)
        with sqlite3.connect(where / "cfarena.db") as conn:
            runs.append(conn.execute("select key, seed from matches order by key").fetchall())
        assert _config(where / "cfarena.db", data["tournament_id"])["seed_fixed"] is True
        with sqlite3.connect(where / "cfarena.db") as conn:
            # the default name says which options differ from the preset
            assert conn.execute("select name from tournaments").fetchone()[0] == \
                "standard rounds=single 2p round-robin"
    assert runs[0] == runs[1] and len(runs[0]) == 2


def test_no_sandbox_says_so_and_records_it(tmp_path: Path) -> None:
    result = run_in_process("run-tournament", *TINY, "--no-sandbox", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--no-sandbox: bots run unsandboxed" in result.stderr
    with sqlite3.connect(tmp_path / "cfarena.db") as conn:
        (tid,) = conn.execute("select id from tournaments").fetchone()
    assert _config(tmp_path / "cfarena.db", tid)["sandbox"] is None
    assert run_sandboxes(tmp_path, zombies=False) == []


def test_a_bot_that_dies_at_start_is_quoted_from_its_sandbox(tmp_path: Path) -> None:
    bot = tmp_path / "dies.py"
    bot.write_text("import sys\nprint('cannot find my weights file', file=sys.stderr)\n"
                   "sys.exit(3)\n")
    result = run_cli("run-tournament", "--bot", f"dies=python {bot}", "--bot", "random",
                     "--players", "2", cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: bot 'dies' exited with code 3 before connecting: bot> cannot find my weights file")
    assert not (tmp_path / "cfarena.db").exists() or _no_matches(tmp_path / "cfarena.db")


def _no_matches(db: Path) -> bool:
    with sqlite3.connect(db) as conn:
        count: int = conn.execute("select count(*) from matches").fetchone()[0]
    return count == 0


def test_a_second_run_of_a_tournament_being_played_is_refused(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"  # 50 ms a decision: the first run lasts long enough
    slow.write_text("import time\nfrom cfarena.sdk import Bot\n\nclass Slow(Bot):\n"
                    "    def choose(self, turn):\n        time.sleep(0.05)\n"
                    "        return turn.legal_moves[0]\n")
    args = ["run-tournament", "--bot", f"slow=python -m cfarena.sdk run {slow}", "--bot",
            "random", "--players", "2", "--games", "2", "--rule", "rounds=2",
            "--concurrency", "1", "--seed", "7"]
    db = tmp_path / "cfarena.db"
    first = subprocess.Popen([CFARENA, *args, "--json"], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _finished_some(db):
            assert first.poll() is None
            time.sleep(0.1)
        second = run_in_process(*args, cwd=tmp_path)  # refused at once: a usage error
        assert second.returncode == 2
        assert second.stderr.strip().splitlines()[-1] == (
            "error: tournament 1 is being played by another cfarena process; wait for it to "
            "end, or stop it and run again to resume")
        out, err = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, 9)
            first.wait()
    assert first.returncode == 0, err[-2000:]
    data = json.loads(out)
    assert data["matches"] == 4 and data["played_now"] == 4  # nobody else played any
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from matches where status = 'finished'"
                            ).fetchone()[0] == 4


def _finished_some(db: Path) -> bool:
    try:
        with sqlite3.connect(db) as conn:
            return bool(conn.execute(
                "select count(*) from matches where status = 'finished'").fetchone()[0])
    except sqlite3.Error:
        return False


def test_a_bot_that_would_see_the_database_is_refused(tmp_path: Path) -> None:
    """A bot named with its directory, where the database also lies: the run refuses
    (also when the directory is reached through a symlink), and writes nothing."""
    (tmp_path / "mybot").mkdir()
    (tmp_path / "mybot" / "bot.py").write_text("print('hi')\n")
    (tmp_path / "alias").symlink_to(tmp_path)
    for shown in (".", str(tmp_path / "alias")):
        result = run_cli("run-tournament", "--bot", f"mine=python -m cfarena.sdk run {shown}",
                         "--bot", "random", "--players", "2", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: bot 'mine' would be able to read {tmp_path}/cfarena.db"
                               f" (it is shown {tmp_path})"), last
        assert "Traceback" not in result.stderr
    assert _no_matches(tmp_path / "cfarena.db") if (tmp_path / "cfarena.db").exists() else True


def test_a_bot_named_file_colon_class_plays_in_the_sandbox(tmp_path: Path) -> None:
    """`NAME=python -m cfarena.sdk run bot.py:Class`, the form `sdk run --help` shows: the
    file is shown to the sandbox (issue 21: it was not, "no such bot file")."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "two_bots.py").write_text(
        "from cfarena.sdk import Bot\n\n"
        "class First(Bot):\n    def choose(self, turn):\n        return turn.legal_moves[0]\n\n"
        "class Last(Bot):\n    def choose(self, turn):\n        return turn.legal_moves[-1]\n")
    data = run_json("run-tournament", "--bot", "last=python -m cfarena.sdk run "
                    "mine/two_bots.py:Last", "--bot", "random", "--players", "2", "--games", "1",
                    "--rule", "rounds=single", cwd=tmp_path)
    last = next(row for row in data["standings"] if row["bot"] == "last")
    assert (last["matches"], last["faults"]) == (2, 0), data["standings"]
