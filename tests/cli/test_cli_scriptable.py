"""Scriptable everywhere: `--json` on the commands a script reads (tokens in it, on stdout
only), tables readable at 80 columns (nothing cut with "…"), usage lines without stray
braces. In-process (CliRunner): no process behaviour is under test."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from cfarena.server.cli import COMMANDS
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import MatchPlan, hash_token, open_database
from cfarena.server.storage.match_writer import to_stored

from .helpers import run_in_process

LONG = "montecarlo-with-a-rather-long-name"  # 34 characters
VERSION = "v2.10.3-rc1"


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, str]:
    """A database with two bots, one with a long name, and one finished ladder match
    between them (versions reported, a fault)."""
    url = f"sqlite:///{tmp_path / 'cfarena.db'}"
    with open_database(url) as db:
        seats = [db.register_bot(name, hash_token(f"token-{name}"),
                                 f"python -m cfarena.sdk run /srv/bots/{name}.py").bot_id
                 for name in (LONG, "greedy")]
        db.schedule_matches(None, [MatchPlan("m1", 7, {"preset": "standard", "rounds": "single"},
                                             2, seats, seat_versions=[VERSION, "1"])])
        record = simulate_record({"preset": "standard", "rounds": "single"}, 2, 7,
                                 names=[LONG, "greedy"], timeouts=(2,))
        assert db.record_match(to_stored(dataclasses.replace(record, match_id="m1")))
    return tmp_path, url


def _json(tmp: Path, *argv: str) -> object:
    result = run_in_process(*argv, "--json", cwd=tmp)
    assert result.returncode == 0 and result.stderr == "", result
    return json.loads(result.stdout)


def test_bots_commands_print_json_with_their_tokens(place: tuple[Path, str]) -> None:
    tmp, url = place
    added = _json(tmp, "bots", "add", "zed", "--db", url)
    assert isinstance(added, dict) and added["added"] is True and added["name"] == "zed"
    with open_database(url, create=False) as db:
        assert db.bot_by_token_hash(hash_token(added["token"])).name == "zed"  # type: ignore[union-attr]
    rotated = _json(tmp, "bots", "rotate", "zed", "--db", url)
    assert isinstance(rotated, dict) and rotated["token"] != added["token"]
    assert rotated["token_changed_at"] is not None and rotated["id"] == added["id"]
    with open_database(url, create=False) as db:
        assert db.bot_by_token_hash(hash_token(added["token"])) is None
        assert db.bot_by_token_hash(hash_token(rotated["token"])).name == "zed"  # type: ignore[union-attr]
    revoked = _json(tmp, "bots", "revoke", "zed", "--db", url)
    assert isinstance(revoked, dict) and revoked["revoked_at"] is not None
    assert "token" not in revoked
    listed = _json(tmp, "bots", "list", "--db", url)
    assert isinstance(listed, list) and sorted(b["name"] for b in listed) == ["greedy", LONG, "zed"]
    assert all("token" not in b and "token_hash" not in b for b in listed)
    again = _json(tmp, "bots", "add", "own", "--token", "my-own-secret", "--db", url)
    assert again == {"id": 4, "name": "own", "added": True, "token": None}  # it is the caller's


def test_show_prints_json(place: tuple[Path, str]) -> None:
    tmp, url = place
    shown = _json(tmp, "show", "m1", "--db", url)
    listed = _json(tmp, "matches", "--db", url)
    assert isinstance(shown, dict) and isinstance(listed, list)
    assert {k: shown[k] for k in listed[0]} == listed[0]  # what `matches --json` says, and
    assert shown["rules"] == {"preset": "standard", "rounds": "single"}
    assert len(shown["round_scores"]) == 1 and len(shown["luck"]) == 2
    assert [f["kind"] for f in shown["faults"]] == ["timeout"]
    assert shown["seat_logs"] == []
    with_logs = _json(tmp, "show", "m1", "--logs", "--db", url)
    assert isinstance(with_logs, dict) and with_logs["luck"] == shown["luck"]


def test_tables_are_readable_at_80_columns(place: tuple[Path, str]) -> None:
    tmp, url = place
    for argv in (["bots", "list"], ["bots", "show", LONG], ["bots", "show", "greedy"],
                 ["matches"], ["show", "m1"]):
        result = run_in_process(*argv, "--db", url, cwd=tmp, env={"COLUMNS": "80"})
        assert result.returncode == 0, result
        lines = result.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, result.stdout
        assert "…" not in result.stdout, result.stdout
    listed = run_in_process("bots", "list", "--db", url, cwd=tmp, env={"COLUMNS": "80"})
    assert re.search(rf"^ 1  {LONG} ", listed.stdout, re.M), listed.stdout  # on one line
    shown = run_in_process("bots", "show", LONG, "--db", url, cwd=tmp, env={"COLUMNS": "80"})
    for word in (VERSION, "games", "first", "last", "rating", "turns", "median", "p99"):
        assert re.search(rf"(^|\s){re.escape(word)}(\s|$)", shown.stdout, re.M), word


def _usages() -> list[list[str]]:
    commands = [[name] for name in COMMANDS if name not in ("bots", "tournaments")]
    return [*commands, *(["bots", sub] for sub in ("add", "list", "rotate", "revoke", "show")),
            ["tournaments", "create"]]


@pytest.mark.parametrize("argv", _usages(), ids=" ".join)
def test_usage_lines_have_no_stray_braces(argv: list[str], tmp_path: Path) -> None:
    shown = run_in_process(*argv, "--help", cwd=tmp_path, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown
    [usage] = [line for line in shown.stdout.splitlines() if "Usage:" in line]
    assert not re.search(r"[{}]|\[\[", usage), usage
    assert list(tmp_path.iterdir()) == []  # nothing left in the working directory
