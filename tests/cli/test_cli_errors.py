"""Bad input: a one-line error, exit code 2, and nothing recorded is touched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cfarena.match.log_format import LOG_FORMAT

from .helpers import copy_played, run_cli, run_in_process, run_json


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, played_tournament: Path) -> Path:
    """A directory with a database holding one finished tournament (a copy of the
    session's `played_tournament`)."""
    tmp = tmp_path_factory.mktemp("recorded")
    copy_played(played_tournament, tmp)
    return tmp


def _snapshot(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "select id, status, totals, ranks, finished_at from matches order by id").fetchall()


# argv, a fragment of the message, and whether bot processes are started (in a
# subprocess then: their exit is the behaviour under test; else in-process)
@pytest.mark.parametrize(("args", "message", "spawns"), [
    (["--rules", "chess"], "unknown preset 'chess'", False),
    (["--rule", "spokes=99"], "'spokes'", False),
    (["--rule", "flavour=mint"], "unknown rule option", False),
    (["--rule", "rounds"], "KEY=VALUE", False),
    (["--players", "9"], "--players must be 2-8", False),
    (["--bot", "nosuchbot", "--bot", "random"], "no bundled bot", False),
    (["--bot", "dead=sh -c 'exit 7'", "--bot", "random", "--players", "2"],
     "exited with code 7", True),
    (["--bot", "typo=python -m cfarena.sdk run no_such_module", "--bot", "random",
      "--players", "2"], "no_such_module", True),
    (["--bot", "mute=sleep 60", "--bot", "random", "--connect-timeout", "2", "--players", "2"],
     "did not connect within 2 s", True),
    (["--bot", "random", "--bot", "greedy", "--bot", "smart"], "or --fill to fill", False),
    (["--bot", "random", "--bot", "greedy", "--players", "2", "--gauntlet", "smart"],
     "--gauntlet smart: not one of the bots", False),
    (["--rule", "hand_size=40", "--players", "4"], "'hand_size'", False),
])
def test_bad_input_exits_2_and_touches_nothing(recorded: Path, args: list[str], message: str,
                                               spawns: bool) -> None:
    db = recorded / "cfarena.db"
    before = _snapshot(db)
    run = run_cli if spawns else run_in_process
    result = run("run-tournament", *args, "--db", f"sqlite:///{db}", cwd=recorded)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(db) == before


def test_unopenable_database(tmp_path: Path) -> None:
    result = run_in_process("run-tournament", "--db",
                            f"sqlite:///{tmp_path}/no/such/dir/x.db", cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot open database" in result.stderr and "Traceback" not in result.stderr
    result = run_in_process("standings", "--db", "postgresql+psycopg://u:p@127.0.0.1:1/x",
                            cwd=tmp_path)
    assert result.returncode == 2 and "cannot open database" in result.stderr


def test_inspection_commands(recorded: Path) -> None:
    db = f"sqlite:///{recorded / 'cfarena.db'}"
    matches = run_json("matches", "--db", db, cwd=recorded, in_process=True)
    assert len(matches) == 4  # type: ignore[arg-type]  # 1 table x 2 rotations x 2 games
    match_id = matches[0]["id"]  # type: ignore[index]
    shown = run_in_process("show", match_id, "--db", db, cwd=recorded)
    assert shown.returncode == 0 and match_id in shown.stdout and "R1" in shown.stdout
    exported = run_in_process("export", match_id, "--db", db, cwd=recorded)
    assert exported.returncode == 0 and f"\"format\": {LOG_FORMAT}" in exported.stdout
    verified = run_in_process("verify", "--all", "--db", db, cwd=recorded)
    assert verified.returncode == 0 and "4 of 4 log(s) genuine" in verified.stdout
    missing = run_in_process("show", "nope", "--db", db, cwd=recorded)
    assert missing.returncode == 2 and "no match 'nope'" in missing.stderr
    tournaments = run_in_process("tournaments", "--db", db, cwd=recorded)
    assert tournaments.returncode == 0 and "finished" in tournaments.stdout


def test_matches_of_a_bot_name_not_there_says_where_it_is(recorded: Path) -> None:
    """The played tournament's entrants are no ladder bots: `matches --bot` without
    --tournament says so (and where the name is) instead of printing an empty table."""
    db = f"sqlite:///{recorded / 'cfarena.db'}"
    for args, message in [
            (("--bot", "greedy"), "error: no ladder bot named 'greedy'; tournament 1 has an "
             "entrant of that name: add --tournament ID\n"),
            (("--bot", "nobody"), "error: no ladder bot named 'nobody' (see `cfarena bots "
             "list`)\n"),
            (("--bot", "nobody", "-t", "1"), "error: no entrant of tournament 1 named "
             "'nobody' (see `cfarena bots list`)\n")]:
        result = run_in_process("matches", *args, "--db", db, cwd=recorded)
        assert (result.returncode, result.stderr) == (2, message)
    entrant = run_json("matches", "--bot", "greedy", "-t", "1", "--db", db, cwd=recorded,
                       in_process=True)
    assert len(entrant) == 4  # type: ignore[arg-type]
    # a bot that is there but has no match of that status: an empty list, no error
    assert run_json("matches", "--bot", "greedy", "-t", "1", "--status", "aborted", "--db",
                    db, cwd=recorded, in_process=True) == []  # type: ignore[comparison-overlap]


def test_a_tournament_entrant_gets_a_web_key_from_bots_rotate(tmp_path: Path,
                                                                 recorded: Path) -> None:
    """`bots rotate NAME --tournament ID` gives an entrant (which has no token of its
    own) a web key for the entrant's pages; a new key replaces the old one."""
    from cfarena.server.credentials import hash_token
    from cfarena.server.storage import open_database

    copy_played(recorded / "cfarena.db", tmp_path)
    db_url = f"sqlite:///{tmp_path / 'cfarena.db'}"
    keys = [run_json("bots", "rotate", "greedy", "-t", "1", "--db", db_url, cwd=tmp_path,
                     in_process=True)["token"] for _ in range(2)]
    with open_database(db_url) as db:
        entrant = db.entrant_by_token_hash(hash_token(keys[1]))
        assert entrant is not None and (entrant.name, entrant.tournament_id) == ("greedy", 1)
        assert db.entrant_by_token_hash(hash_token(keys[0])) is None
        assert db.bot_by_name("greedy") is None  # still no ladder bot of that name
    missing = run_in_process("bots", "rotate", "nobody", "-t", "1", "--db", db_url,
                             cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (
        2, "error: tournament 1 has no entrant named 'nobody'\n")


def test_replay_export_and_verify_through_the_cli(recorded: Path) -> None:
    import json

    db = f"sqlite:///{recorded / 'cfarena.db'}"
    listed = run_json("matches", "--db", db, cwd=recorded, in_process=True)
    match_id = listed[0]["id"]  # type: ignore[index]
    shown = run_in_process("replay", match_id, "--all", "--db", db, cwd=recorded)
    assert shown.returncode == 0, shown.stderr
    assert "round 1" in shown.stdout and "ends" in shown.stdout
    seat_view = run_in_process("replay", match_id, "--all", "--seat", "1", "--db", db, cwd=recorded)
    assert seat_view.returncode == 0 and "view: seat 1" in seat_view.stdout
    bad_seat = run_in_process("replay", match_id, "--seat", "5", "--db", db, cwd=recorded)
    assert bad_seat.returncode == 2 and "--seat must be 0..1" in bad_seat.stderr

    html = recorded / "viewer.html"
    made = run_in_process("replay", match_id, "--html", str(html), "--db", db, cwd=recorded)
    assert made.returncode == 0 and html.read_text().startswith("<!DOCTYPE html>")

    exported = recorded / "game.json"
    assert run_in_process("export", match_id, "-o", str(exported), "--db", db,
                   cwd=recorded).returncode == 0
    from_file = run_in_process("replay", "--file", str(exported), "--all", cwd=recorded)
    assert from_file.returncode == 0 and from_file.stdout == shown.stdout
    ok = run_in_process("verify", "--file", str(exported), cwd=recorded)
    assert ok.returncode == 0 and "1 of 1 log(s) genuine" in ok.stdout

    log = json.loads(exported.read_text())
    log["result"]["totals"][0] += 1
    tampered = recorded / "tampered.json"
    tampered.write_text(json.dumps(log))
    caught = run_in_process("verify", "--file", str(tampered), cwd=recorded)
    assert caught.returncode == 1 and "result.totals[0]" in caught.stdout

    # a log changed inside the database is caught by its stored digest
    copy = recorded / "copy.db"
    copy.write_bytes((recorded / "cfarena.db").read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("update game_logs set log = replace(log, '\"seed\"', '\"seed\" ') "
                     "where match_id = ?", (match_id,))
        raw = conn.execute("select log from game_logs where match_id = ?",
                           (match_id,)).fetchone()[0]
        changed = json.loads(raw)
        changed["seats"][0] = "impostor"
        conn.execute("update game_logs set log = ? where match_id = ?",
                     (json.dumps(changed), match_id))
    in_db = run_in_process("verify", match_id, "--db", f"sqlite:///{copy}", cwd=recorded)
    assert in_db.returncode == 1 and "sha256 mismatch" in in_db.stdout

    garbage = recorded / "garbage.json"
    garbage.write_text("{not json")
    refused = run_in_process("replay", "--file", str(garbage), cwd=recorded)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


def test_rules_file_with_overrides(tmp_path: Path) -> None:
    rules = tmp_path / "house.toml"
    rules.write_text('preset = "maltese"\nspokes = 6\nrounds = "single"\n')
    data = run_json("run-tournament", "--rules-file", str(rules), "--rule", "double_blank=25",
                    "--bot", "random", "--bot", "greedy", "--players", "2", "--games", "1",
                    "--db", f"sqlite:///{tmp_path / 'r.db'}", cwd=tmp_path, in_process=True)
    assert data["status"] == "finished"
    listed = run_json("matches", "--db", f"sqlite:///{tmp_path / 'r.db'}", cwd=tmp_path,
                      in_process=True)
    shown = run_in_process("export", listed[0]["id"], "--db",  # type: ignore[index]
                    f"sqlite:///{tmp_path / 'r.db'}", cwd=tmp_path)
    import json

    log = json.loads(shown.stdout)
    assert log["rules"] == {"preset": "maltese", "spokes": 6, "rounds": "single",
                            "double_blank": 25}
    bad = tmp_path / "bad.toml"
    bad.write_text('preset = "maltese"\nspokes = "many"\n')
    refused = run_in_process("run-tournament", "--rules-file", str(bad), cwd=tmp_path)
    assert refused.returncode == 2 and "'spokes'" in refused.stderr
