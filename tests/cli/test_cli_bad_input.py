"""The audit's bad-input list (issue 21): each input gets one line on stderr naming what is
wrong, exit 2, and no traceback. In-process (typer's CliRunner): no process behaviour is
under test here; a database with one stored match stands in for a played tournament."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cfarena.server.cli import app
from cfarena.server.storage import open_database

from .helpers import one_match_database

MATCH = "m1"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a database holding one finished 2-player match (`m1`), a
    deeply nested JSON file, a binary file and a cut-off JSON file."""
    tmp = tmp_path_factory.mktemp("bad-input")
    one_match_database(tmp / "cfarena.db", MATCH)
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "binary.json").write_bytes(bytes(range(256)) * 8)
    (tmp / "cut.json").write_text('{"format": 1, "match_id": ')
    return tmp


N500 = "n" * 500
TRAINS = ["--rules", "trains"]

# argv (after `cfarena`), a fragment of the one-line message
ROWS: list[tuple[list[str], str]] = [
    # files that cannot be written, or read as a log
    (["export", MATCH, "-o", "/nonexistent/dir/x.json"],
     "--output /nonexistent/dir/x.json: cannot write: No such file or directory"),
    (["export", MATCH, "-o", "x.xyz"], "give --format json, html or txt"),
    (["export", MATCH, "-o", "x.txt", "--seat", "9"], "--seat must be 0..1"),
    (["replay", MATCH, "--html", "/nonexistent/dir/x.html"],
     "--html /nonexistent/dir/x.html: cannot write: No such file or directory"),
    (["replay", "--file", "deep.json"], "nests too deeply"),
    (["replay", "--file", "binary.json"], "not UTF-8 text"),
    (["run-tournament", "--log-dir", "/proc/version"],
     "--log-dir /proc/version: exists and is not a directory"),
    # names
    (["bots", "add", ""], "a bot name cannot be empty"),
    (["bots", "add", N500], "at most 64 characters, this one 500"),
    (["bots", "add", "new\nline"], "bad bot name 'new\\nline'"),
    (["run-tournament", "--bot", f"{N500}=sleep 1", "--bot", "random"], "at most 64"),
    # numbers out of range
    (["run-tournament", "--seed", "-1"], "--seed must be a whole number from 0"),
    (["run-tournament", "--seed", str(2**64)], "--seed must be a whole number from 0"),
    (["serve", "--seed", "-1"], "--seed must be a whole number from 0"),
    (["run-tournament", "--connect-timeout", "-1"], "--connect-timeout must be a number"),
    (["run-tournament", "--connect-timeout", "inf"], "--connect-timeout must be a number"),
    (["worker", "--connect-timeout", "0"], "--connect-timeout must be a number"),
    (["matches", "--limit", "-1"], "--limit must be at least 1, got -1"),
    # numbers past a 64-bit column: refused, not an OverflowError from the database
    (["matches", "--limit", str(2**64)], "--limit must be at most 9223372036854775807"),
    (["matches", "--tournament", str(2**64)], "--tournament must be at most"),
    (["standings", "--tournament", str(2**64)], "--tournament must be at most"),
    (["verify", "--tournament", str(2**64)], "--tournament must be at most"),
    (["run-tournament", "--resume", str(2**64)], "--resume must be at most"),
    # a schedule too large to build (it hung, growing without bound)
    (["run-tournament", "--games", str(10**20)], "--games must be at most 100000"),
    (["tournaments", "create", "--games", str(10**20)], "--games must be at most 100000"),
    (["run-tournament", "--timeout-ms", str(10**20)], "--timeout-ms must be at most 600000"),
    (["serve", "--timeout-ms", "0"], "--timeout-ms must be at least 1, got 0"),
    (["run-tournament", "--memory-mb", str(10**17)], "--memory-mb must be at most"),
    # impossible rules, the option named
    (["run-tournament", "--rule", "boneyard_reserve=1000"],
     "rule option 'boneyard_reserve': must be between 0 and 10"),
    ([*TRAINS, "--rule", "spokes=9"], "rule option 'spokes': trains allows at most 8"),
    (["run-tournament", "--rule", "toes=9"], "rule option 'toes': must be between 1 and 8"),
    (["run-tournament", "--rule", "double_blank=7"], "rule option 'double_blank'"),
    (["serve", "--rule", "toes=9"], "rule option 'toes'"),
    (["tournaments", "create", "--rule", "toes=9"], "rule option 'toes'"),
    # click's own usage errors: one line too
    (["nosuch"], "No such command 'nosuch'. (see `cfarena --help`)"),
    (["matches", "--nope"], "No such option: --nope (see `cfarena matches --help`)"),
    (["matches", "--limit", "x"], "Invalid value for '--limit'"),
    (["show"], "Missing argument 'MATCH_ID'. (see `cfarena show --help`)"),
    (["bots", "nosuch"], "No such command 'nosuch'. (see `cfarena bots --help`)"),
    (["bots", "show", "a", "--faults"], "Option '--faults' requires an argument"),
    (["tournaments", "create", "--nope"], "No such option: --nope"),
]


@pytest.mark.parametrize(("argv", "message"), ROWS,
                         ids=[" ".join(a)[:60].replace("\n", "\\n") for a, _ in ROWS])
def test_bad_input_is_one_line_and_exit_2(place: Path, argv: list[str], message: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(place)
    argv = ["run-tournament", *argv] if argv[0] == "--rules" else argv
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "400",
                                                "CFARENA_DB": f"sqlite:///{place}/cfarena.db"})
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0], lines[0]
    assert result.stdout == ""


def test_verify_names_each_unreadable_file_and_counts_it(place: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.chdir(place)
    with open_database(f"sqlite:///{place}/cfarena.db") as db:
        (place / "good.json").write_text(json.dumps(db.get_log(MATCH)))
    files = ["good.json", "deep.json", "binary.json", "cut.json", "missing.json"]
    result = CliRunner().invoke(app, ["verify", "--verbose",
                                      *(a for f in files for a in ("--file", f))],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("OK    good.json")
    reasons = {"deep.json": "nests too deeply", "binary.json": "not UTF-8 text",
               "cut.json": "line 1, column 27", "missing.json": "cannot read"}
    for name, reason in reasons.items():
        [line] = [x for x in lines if x.startswith(f"FAIL  {name}:")]
        assert reason in line, line
    assert lines[-1] == "1 of 5 log(s) genuine (4 could not be read)"
    assert os.path.exists(place / "good.json")


@pytest.mark.parametrize(("argv", "value", "message"), [
    (["run-tournament", "--bot", "montecarlo", "--bot", "random"], "fast",
     "bundled bot montecarlo: CFARENA_MC_BUDGET_MS must be a number of milliseconds, got "
     "'fast' (in your environment)"),
    (["run-tournament"], "-1",
     "bundled bot montecarlo: CFARENA_MC_BUDGET_MS must be a finite number >= 0"),
    (["run-tournament", "--bot", "montecarlo", "--bot", "random"], "nan", "finite number"),
    (["run-tournament", "--bot", "montecarlo", "--bot", "random"], "inf", "finite number"),
    (["sprt", "montecarlo", "greedy"], "x", "bundled bot montecarlo: CFARENA_MC_BUDGET_MS"),
])
def test_a_bundled_bot_s_bad_setting_is_refused_before_anything_is_written(
        place: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], value: str,
        message: str) -> None:
    """A setting the bundled bot would refuse is the organiser's error, said at once: it
    never becomes a bot that crashes in its matches."""
    monkeypatch.chdir(place)
    db = place / "cfarena.db"
    before = db.read_bytes()
    result = CliRunner().invoke(app, argv, env={
        "COLUMNS": "400", "CFARENA_DB": f"sqlite:///{db}", "CFARENA_MC_BUDGET_MS": value})
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0], lines[0]
    assert db.read_bytes() == before
