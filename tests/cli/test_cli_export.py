"""Results in one step: `export --tournament` writes every game log of a tournament as
JSON Lines (each line what `export MATCH` prints), streamed from storage a batch at a
time; `verify` and `replay --file` read such a file; `verify --tournament/--all` print
the failures and one summary line. In-process (CliRunner): no process behaviour is under
test; the matches are played by the simulation and stored through the storage API."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import MatchPlan, StorageError, hash_token, open_database
from cfarena.server.storage.match_writer import to_stored

from .helpers import run_in_process

RULES = {"preset": "standard", "rounds": "single"}
MATCHES = 5


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    """A database with two tournaments: the first of `MATCHES` finished 2-player
    matches (one round each), the second of one; the directory, URL and the first's ids."""
    tmp = tmp_path_factory.mktemp("export")
    url = f"sqlite:///{tmp / 'cfarena.db'}"
    with open_database(url) as db:
        seats = [db.register_bot(name, hash_token(f"token-{name}")).bot_id
                 for name in ("ann", "bea")]
        ids: list[str] = []
        for tournament, count in ((db.create_tournament("final", {"n": 1}), MATCHES),
                                  (db.create_tournament("other", {"n": 2}), 1)):
            plans = [MatchPlan(f"g{n}", n, RULES, 2, seats) for n in range(count)]
            for n, match_id in enumerate(db.schedule_matches(tournament, plans)):
                record = simulate_record(RULES, 2, n, names=["ann", "bea"])
                assert db.record_match(to_stored(dataclasses.replace(record,
                                                                     match_id=match_id)))
                ids.append(match_id)
    return tmp, url, ids[:MATCHES]


def test_export_tournament_is_the_lines_export_match_prints(place: tuple[Path, str, list[str]]
                                                            ) -> None:
    tmp, url, ids = place
    printed = run_in_process("export", "--tournament", "1", "--db", url, cwd=tmp)
    assert printed.returncode == 0, printed.stderr
    written = run_in_process("export", "-t", "1", "-o", "final.jsonl", "--db", url, cwd=tmp)
    assert written.returncode == 0 and "5 game logs" in written.stdout, written.stdout
    text = (tmp / "final.jsonl").read_text(encoding="utf-8")
    assert text == printed.stdout
    lines = text.splitlines(keepends=True)
    assert [json.loads(line)["match_id"] for line in lines] == sorted(ids)  # not tournament 2
    for match_id, line in zip(sorted(ids), lines, strict=True):
        one = run_in_process("export", match_id, "--db", url, cwd=tmp)
        assert one.stdout == line  # the same bytes, one line each
    assert not [p.name for p in tmp.iterdir() if p.name.endswith(".part")]


def test_export_refuses_what_it_cannot_do(place: tuple[Path, str, list[str]]) -> None:
    tmp, url, ids = place
    for argv, message in ((["export", "--tournament", "9"], "no tournament 9"),
                          (["export"], "give a MATCH id or --tournament ID"),
                          (["export", ids[0], "-t", "1"], "give a MATCH id or --tournament ID"),
                          (["export", "-t", "1", "--format", "html"], "no --format html/txt"),
                          (["export", "-t", "1", "-o", "/nonexistent/dir/x.jsonl"],
                           "--output /nonexistent/dir/x.jsonl: cannot write")):
        result = run_in_process(*argv, "--db", url, cwd=tmp)
        assert result.returncode == 2 and result.stderr.startswith("error: "), result
        assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_verify_and_replay_read_json_lines(place: tuple[Path, str, list[str]]) -> None:
    tmp, url, ids = place
    assert run_in_process("export", "-t", "1", "-o", "all.jsonl", "--db", url,
                          cwd=tmp).returncode == 0
    verified = run_in_process("verify", "--file", "all.jsonl", cwd=tmp)
    assert verified.returncode == 0 and verified.stdout == "5 of 5 log(s) genuine\n"

    from_file = run_in_process("replay", ids[2], "--file", "all.jsonl", "--all", cwd=tmp)
    from_db = run_in_process("replay", ids[2], "--all", "--db", url, cwd=tmp)
    assert from_file.returncode == 0 and from_file.stdout == from_db.stdout
    several = run_in_process("replay", "--file", "all.jsonl", cwd=tmp)
    assert several.returncode == 2 and "give the match id" in several.stderr
    absent = run_in_process("replay", "nope", "--file", "all.jsonl", cwd=tmp)
    assert absent.returncode == 2 and "no game log of match 'nope'" in absent.stderr

    lines = (tmp / "all.jsonl").read_text(encoding="utf-8").splitlines()
    log = json.loads(lines[1])
    log["result"]["totals"][0] += 1
    lines[1] = json.dumps(log)
    lines[3] = lines[3][:40]  # cut short
    (tmp / "tampered.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    caught = run_in_process("verify", "--file", "tampered.jsonl", cwd=tmp)
    assert caught.returncode == 1
    out = caught.stdout.splitlines()
    assert out[0] == f"FAIL  tampered.jsonl:2 (match {log['match_id']}): 1 problem(s)"
    assert out[1].startswith("      - result.totals[0]")
    assert out[2].startswith("FAIL  tampered.jsonl:4: not a JSON game log (column ")
    assert out[-1] == "3 of 5 log(s) genuine (1 could not be read)" and len(out) == 4


def test_verify_a_tournament_prints_failures_and_a_summary(
        place: tuple[Path, str, list[str]], tmp_path: Path) -> None:
    tmp, url, ids = place
    quiet = run_in_process("verify", "--tournament", "1", "--db", url, cwd=tmp)
    assert quiet.returncode == 0 and quiet.stdout == "5 of 5 log(s) genuine\n"
    everything = run_in_process("verify", "--all", "--db", url, cwd=tmp)
    assert everything.stdout == "6 of 6 log(s) genuine\n"
    verbose = run_in_process("verify", "--tournament", "1", "--verbose", "--db", url, cwd=tmp)
    assert [line.split()[:2] for line in verbose.stdout.splitlines()[:-1]] == [
        ["OK", match_id + ":"] for match_id in sorted(ids)]

    copy = tmp_path / "copy.db"
    copy.write_bytes((tmp / "cfarena.db").read_bytes())
    with sqlite3.connect(copy) as conn:  # a log changed inside the database
        conn.execute("update game_logs set log = replace(log, '\"ann\"', '\"eve\"') "
                     "where match_id = ?", (ids[1],))
    changed = run_in_process("verify", "-t", "1", "--db", f"sqlite:///{copy}", cwd=tmp)
    assert changed.returncode == 1
    assert changed.stdout.splitlines() == [
        f"FAIL  {ids[1]}: game log of match {ids[1]!r} is corrupt (sha256 mismatch)",
        "4 of 5 log(s) genuine (1 could not be read)"]
    report = json.loads(run_in_process("verify", "-t", "1", "--json", "--db",
                                       f"sqlite:///{copy}", cwd=tmp).stdout)
    assert [log["ok"] for log in report["logs"]] == [True, False, True, True, True]
    refused = run_in_process("export", "-t", "1", "-o", "x.jsonl", "--db",
                             f"sqlite:///{copy}", cwd=tmp_path)
    assert refused.returncode == 1 and "sha256 mismatch" in refused.stderr
    assert not list(tmp_path.glob("*x.jsonl*"))  # no half-written file


def test_game_logs_stream_in_batches(place: tuple[Path, str, list[str]], tmp_path: Path
                                     ) -> None:
    """Read two at a time, every log comes once, in match id order, and a log whose
    digest mismatches is an error in its place, the others still read."""
    tmp, url, ids = place
    with open_database(url, create=False) as db:
        assert db.game_log_count(1) == MATCHES and db.game_log_count() == MATCHES + 1
        streamed = list(db.game_logs(1, batch=2))
        assert [m for m, _ in streamed] == sorted(ids)
        assert all(db.get_log(m) == log for m, log in streamed)
    copy = tmp_path / "copy.db"
    copy.write_bytes((tmp / "cfarena.db").read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("update game_logs set sha256 = 'x' where match_id = ?", (ids[0],))
    with open_database(f"sqlite:///{copy}", create=False) as db:
        found = dict(db.game_logs(None, batch=2))
    assert isinstance(found.pop(ids[0]), StorageError) and len(found) == MATCHES
