"""`cfarena bots rotate|revoke|show` and `standings --ladder` on a real SQLite file
(in-process: they start no process); usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cfarena.server.storage import MatchPlan, StoredMatch, hash_token, open_database
from tests.cli.helpers import run_in_process, run_json


def test_rotate_revoke_show(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    added = run_in_process("bots", "add", "alice", "--db", db, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    first = added.stdout.strip().splitlines()[-1]
    rotated = run_in_process("bots", "rotate", "alice", "--db", db, cwd=tmp_path)
    assert rotated.returncode == 0, rotated.stderr
    second = rotated.stdout.strip().splitlines()[-1]
    assert second != first and len(second) >= 40 and not second.startswith("-")
    with open_database(db) as store:
        bot = store.bot_by_token_hash(hash_token(second))
        assert bot is not None and bot.name == "alice"
        assert store.bot_by_token_hash(hash_token(first)
                                       ) is None
        bob = store.register_bot("bob", "b" * 64).bot_id
        store.schedule_matches(None, [MatchPlan("m1", 5, {"preset": "standard"}, 2,
                                                [bot.id, bob], seat_versions=["7", ""])])
        store.record_match(StoredMatch("m1", round_scores=[[0, 9]], totals=[0, 9],
                                       ranks=[1, 2]))
    assert run_in_process("bots", "revoke", "alice", "--db", db, cwd=tmp_path).returncode == 0
    listed = run_in_process("bots", "list", "--db", db, cwd=tmp_path)
    assert "revoked" in listed.stdout
    report = run_json("bots", "show", "alice", "--pool", "standard/2p", "--db", db,
                      cwd=tmp_path, in_process=True)
    [version] = report["versions"]
    assert (version["version"], version["matches"]) == ("7", 1)
    assert version["score"] is not None and version["score"] > -2.0
    ladder = run_json("standings", "--pool", "standard/2p", "--ladder", "--db", db,
                      cwd=tmp_path, in_process=True)
    assert [(r["bot"], r["version"]) for r in ladder] == [  # type: ignore[index]
        ("alice", "7"), ("bob", "")]
    shown = run_in_process("standings", "--pool", "standard/2p", "--db", db, cwd=tmp_path)
    assert "Ladder, pool standard/2p" in shown.stdout and "check" in shown.stdout
    assert "revoked" in shown.stdout  # alice, marked


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    assert run_in_process("bots", "add", "alice", "--db", db, cwd=tmp_path).returncode == 0
    for argv, message in [
        (["bots", "rotate", "nobody"], "error: no bot named 'nobody'"),
        (["bots", "show", "nobody"], "error: no bot named 'nobody'"),
        (["bots", "show", "alice", "--faults", "-1"], "error: --faults must be 0 or more"),
        (["standings", "-t", "1", "--ladder"], "error: --ladder and --versions are for"),
        (["serve", "--starve-after", "-1"], "error: --starve-after must be 0 or more"),
        (["serve", "--dead-after", "2"], "error: --dead-after must be at least 3 seconds"),
        (["serve", "--dead-after", "nan"], "error: --dead-after must be at least 3 seconds"),
        (["serve", "--flush-timeout", "-1"], "error: --flush-timeout must be 0 or more"),
    ]:
        result = run_in_process(*argv, "--db", db, cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, (
            argv, result.stderr)
    sdk = subprocess.run([sys.executable, "-m", "cfarena.sdk", "run", "cfarena.bots.random_bot",
                          "--token", "x" * 10, "--version", "v" * 65],
                         capture_output=True, text=True, timeout=60, check=False)
    assert sdk.returncode == 2 and "--version must be at most 64 characters" in sdk.stderr
