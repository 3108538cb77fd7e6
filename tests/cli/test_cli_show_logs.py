"""`cfarena show MATCH [--logs]`: each seat's captured bot output, read from the database
(in-process: a read starts no process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cfarena.match.record import Fault
from cfarena.server.storage import (
    FaultKind,
    MatchPlan,
    MatchStatus,
    SeatLog,
    StoredMatch,
    hash_token,
    open_database,
)

from .helpers import run_in_process

LIMIT = "memory limit 512 MiB exceeded"
# a bot's output may hold anything: rich markup, emoji codes, terminal escapes, tabs
ALPHA_OUT = "".join(f"alpha thinks about turn {i}\n" for i in range(46))  # 1232 B
GAMMA_OUT = ("gamma starting [bold]not markup[/] :smile:\n\tindented\n"
             "\x1b[2Jclear screen?\n[... 1000 bytes not kept ...]\nallocating more\n")


# how a seat ended that did not find a file: the arena's line, then its hint (a line)
NOT_FOUND = "exited with code 1: bot> weights.bin: No such file or directory"
HINT = "hint: the sandbox shows only the system directories, Python's and /bots/beta"


@pytest.fixture(scope="module")
def db_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with a finished 3-seat match with seat logs, and one without logs."""
    path = tmp_path_factory.mktemp("show-logs") / "cfarena.db"
    db = open_database(f"sqlite:///{path}")
    try:
        ids = [db.register_bot(name, hash_token(f"token-{name}")).bot_id
               for name in ("alpha", "beta", "gamma")]
        rules = {"preset": "standard"}
        db.schedule_matches(None, [
            MatchPlan(key="m1", seed=5, rules=rules, players=3, seat_bot_ids=ids),
            MatchPlan(key="m2", seed=6, rules=rules, players=2, seat_bot_ids=ids[:2]),
            MatchPlan(key="m3", seed=7, rules=rules, players=2, seat_bot_ids=ids[:2]),
        ])
        assert db.record_match(StoredMatch(
            "m1", round_scores=[[0, 7, 30]], totals=[0, 7, 30], ranks=[1, 2, 3],
            forfeited=[2], faults=[Fault(2, FaultKind.LIMIT, LIMIT, 4)],
            seat_logs=[
                SeatLog(0, ALPHA_OUT, len(ALPHA_OUT), "exited with code 0"),
                SeatLog(2, GAMMA_OUT, 2 * 2**20, LIMIT),
            ]))
        assert db.record_match(StoredMatch("m2", status=MatchStatus.ABORTED, reason="stopped"))
        assert db.record_match(StoredMatch(
            "m3", round_scores=[[0, 7]], totals=[0, 7], ranks=[1, 2],
            seat_logs=[SeatLog(1, "no weights\n", 11, f"{NOT_FOUND}\n{HINT}")]))
    finally:
        db.close()
    return path


def _show(db_file: Path, *args: str) -> str:
    result = run_in_process("show", *args, "--db", f"sqlite:///{db_file}", cwd=db_file.parent)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def test_show_names_the_seat_logs_without_printing_them(db_file: Path) -> None:
    stdout = _show(db_file, "m1")
    lines = stdout.splitlines()
    assert "seat 0 (alpha): 1.2 KiB of output, exited with code 0 — see --logs" in lines
    assert f"seat 2 (gamma): 2.0 MiB of output, {LIMIT} — see --logs" in lines
    assert not any(line.startswith("seat 1 (beta)") for line in lines)  # it printed nothing
    assert f"fault seat 2 (gamma) limit at turn 4: {LIMIT}" in lines
    assert "alpha thinks" not in stdout and "gamma starting" not in stdout


def test_show_logs_prints_each_seats_output_verbatim_and_safe(db_file: Path) -> None:
    stdout = _show(db_file, "m1", "--logs")
    assert "see --logs" not in stdout
    alpha = "── seat 0 (alpha): exited with code 0; 1.2 KiB of output ──\n"
    gamma = f"── seat 2 (gamma): {LIMIT}; 2.0 MiB of output ──\n"
    # after the usual output (the fault line), by seat, each heading over its output
    assert stdout.index(f"limit at turn 4: {LIMIT}") < stdout.index(alpha) < stdout.index(gamma)
    assert alpha + ALPHA_OUT in stdout
    # markup and emoji codes stay text; the escape sequence is shown, not sent
    assert gamma + GAMMA_OUT.replace("\x1b", "\\x1b") in stdout
    assert "\x1b" not in stdout
    assert "seat 1 (beta)" not in stdout


def test_a_seats_end_and_its_hint_are_lines_of_their_own(db_file: Path) -> None:
    lines = _show(db_file, "m3").splitlines()
    at = lines.index(f"seat 1 (beta): 11 B of output, {NOT_FOUND} — see --logs")
    assert lines[at + 1] == HINT
    lines = _show(db_file, "m3", "--logs").splitlines()
    at = lines.index(f"── seat 1 (beta): {NOT_FOUND}; 11 B of output ──")
    assert lines[at + 1:at + 3] == [HINT, "no weights"]


def test_show_logs_of_a_match_without_any(db_file: Path) -> None:
    stdout = _show(db_file, "m2", "--logs")
    assert "aborted" in stdout and "reason: stopped" in stdout
    assert "no seat output stored for this match" in stdout
    assert "see --logs" not in _show(db_file, "m2")


def test_show_logs_of_an_unknown_match(db_file: Path) -> None:
    result = run_in_process("show", "nope", "--logs", "--db", f"sqlite:///{db_file}",
                            cwd=db_file.parent)
    assert result.returncode == 2
    assert "no match 'nope'" in result.stderr and "Traceback" not in result.stderr
