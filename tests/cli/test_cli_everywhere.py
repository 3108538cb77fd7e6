"""Everywhere in the CLI: read commands never create a database, any URL a user pastes
works or is refused in one line, 64-bit seeds leave as strings, `show` and `matches`
read at 80 columns, flags look like flags, and a taken bot name is said to be taken.
The commands run in-process (`run_in_process`); the tournament read is played for real."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cfarena.match.record import Fault, FaultKind
from cfarena.server.replay import simulate_log
from cfarena.server.storage import MatchPlan, StoredMatch, hash_token, open_database
from tests.harness.ports import free_port
from tests.harness.postgres import PgCluster, query

from .helpers import CFARENA, copy_played, run_in_process, run_json

ROOT = Path(__file__).resolve().parents[2]
READ_COMMANDS = [
    ["standings"], ["tournaments"], ["matches"], ["show", "m1"], ["export", "m1"],
    ["replay", "m1", "--all"], ["verify", "--all"], ["bots", "list"], ["bots", "show", "x"],
    ["bots", "revoke", "x"], ["bots", "rotate", "x"], ["publish", "1", "site"],
]
BIG_SEED = 2**63 - 1  # JavaScript would read 9223372036854775807 as ...808
LONG = ["montecarlo-with-a-rather-long-name-v2", "greedy-but-also-named-at-length-x",
        "the-third-bot-whose-name-is-longest-of-all"]
RULES = {"preset": "standard", "spokes": 4, "draw": "until_playable", "play_drawn": "may",
         "tie_break": "zero_rounds", "double_blank": 25, "boneyard_reserve": 2}


def run_at(width: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command with a terminal `width` columns wide (rich and typer read COLUMNS
    when they start: a process of its own)."""
    return subprocess.run([CFARENA, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, COLUMNS=str(width)), check=False)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The usage error: exit 2, one line "error: ..." on stderr, nothing on stdout."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""
    return result.stderr.strip()


def files_in(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, played_tournament: Path
             ) -> tuple[Path, str]:
    """A database with one tournament played for real (bots, referee, storage): a copy
    of the session's `played_tournament`."""
    tmp = tmp_path_factory.mktemp("everywhere")
    return tmp, f"sqlite:///{copy_played(played_tournament, tmp)}"


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A database written through the storage API: m1, a 10-round match of three bots
    with long names, many rule options and the largest seed, with its game log; and
    old, a format-1 log stored before seeds became strings."""
    tmp = tmp_path_factory.mktemp("crafted")
    url = f"sqlite:///{tmp / 'cfarena.db'}"
    log = simulate_log(RULES, 3, BIG_SEED, names=LONG, timeouts=(40,))
    old: dict[str, Any] = json.loads(
        (ROOT / "tests" / "replay" / "format1_logs.json").read_text())["maltese-3p-forfeit"]
    db = open_database(url)
    try:
        ids = [db.register_bot(name, hash_token(f"token-{name}")).bot_id for name in LONG]
        old_ids = [db.register_bot(name, hash_token(f"token-{name}")).bot_id
                   for name in old["seats"]]
        db.schedule_matches(None, [
            MatchPlan(key="m1", seed=BIG_SEED, rules=RULES, players=3, seat_bot_ids=ids),
            MatchPlan(key="old", seed=old["seed"], rules=old["rules"], players=3,
                      seat_bot_ids=old_ids),
        ])
        for key, game in (("m1", log), ("old", old)):
            res = game["result"]
            assert db.record_match(StoredMatch(
                key, reason=game["reason"], round_scores=res["round_scores"],
                totals=res["totals"], ranks=res["ranks"], forfeited=res["forfeited"],
                log=game, log_format=game["format"],
                faults=[Fault(f["seat"], FaultKind(f["kind"]), f["detail"], f["turn_id"])
                        for f in game["faults"]]))
    finally:
        db.close()
    assert len(log["result"]["round_scores"]) == 10 and log["faults"]
    return tmp, url


# -------------------------------------------------- read commands open, never create
@pytest.mark.parametrize("args", READ_COMMANDS, ids=[" ".join(a) for a in READ_COMMANDS])
def test_a_read_command_refuses_a_missing_sqlite_file_and_creates_nothing(
    args: list[str], tmp_path: Path
) -> None:
    before = files_in(tmp_path)
    for path in (tmp_path / "cfarena-typo.db", tmp_path / "no" / "such" / "dir" / "x.db"):
        error = one_line_error(run_in_process(*args, "--db", f"sqlite:///{path}", cwd=tmp_path))
        assert error == f"error: no database at {path}"
    # a relative path, from $CFARENA_DB: named as given, looked for in the working directory
    result = run_in_process(*args, cwd=tmp_path, env={"CFARENA_DB": "sqlite:///typo.db"})
    assert one_line_error(result) == "error: no database at typo.db"
    assert files_in(tmp_path) == before  # no file, no -wal/-shm, no directory


def test_a_read_command_refuses_a_file_without_cfarena_tables_and_leaves_it(
    tmp_path: Path
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table notes (body text)")
    other_bytes = other.read_bytes()
    for path in (empty, other):
        error = one_line_error(run_in_process("standings", "--db", f"sqlite:///{path}",
                                              cwd=tmp_path))
        assert error.startswith(f"error: no cfarena database at sqlite:///{path}")
    assert empty.read_bytes() == b"" and other.read_bytes() == other_bytes
    assert files_in(tmp_path) == ["empty.db", "other.db"]


def test_write_commands_still_create_the_database(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "arena.db"
    path.parent.mkdir()
    added = run_in_process("bots", "add", "alpha", "--quiet", "--db", f"sqlite:///{path}",
                    cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert path.exists()
    listed = run_in_process("bots", "list", "--db", f"sqlite:///{path}", cwd=tmp_path)
    assert listed.returncode == 0 and "alpha" in listed.stdout
    # and the read commands read it
    for args in (["standings"], ["tournaments"], ["matches"]):
        assert run_in_process(*args, "--db", f"sqlite:///{path}", cwd=tmp_path).returncode == 0


def test_read_commands_read_an_existing_database(recorded: tuple[Path, str]) -> None:
    tmp, url = recorded
    matches = run_json("matches", "--db", url, cwd=tmp, in_process=True)
    match_id = matches[0]["id"]  # type: ignore[index]
    for args in (["standings"], ["tournaments"], ["matches"], ["show", match_id],
                 ["export", match_id], ["replay", match_id, "--all"], ["verify", "--all"],
                 ["bots", "list"]):
        result = run_in_process(*args, "--db", url, cwd=tmp)
        assert result.returncode == 0, (args, result.stderr)


# ------------------------------------------------------------------ database URLs
def test_psycopg_is_a_dependency_not_an_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("psycopg[binary]") for d in project["dependencies"])
    import psycopg  # installed with cfarena itself

    assert psycopg.__version__


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+psycopg"])
def test_every_postgres_url_form_reaches_the_driver(scheme: str, tmp_path: Path) -> None:
    port = free_port()  # nothing listens on it
    error = one_line_error(run_in_process("tournaments", "--db",
                                   f"{scheme}://cf:secret@127.0.0.1:{port}/arena", cwd=tmp_path))
    # the psycopg driver tried to connect: no "No module named", no unknown dialect
    assert error.startswith(f"error: cannot open database postgresql+psycopg://cf:***@"
                            f"127.0.0.1:{port}/arena: connection failed"), error
    assert "secret" not in error
    assert files_in(tmp_path) == []


@pytest.mark.parametrize(("url", "start"), [
    ("mysql://cf@localhost/arena", "error: unsupported database URL scheme 'mysql://'"),
    ("postgresql+psycopg2://cf@localhost/arena",
     "error: unsupported database URL scheme 'postgresql+psycopg2://'"),
    ("cfarena.db", "error: invalid database URL 'cfarena.db'"),
    ("", "error: invalid database URL ''"),
])
def test_a_url_of_no_known_form_names_the_accepted_forms(url: str, start: str,
                                                         tmp_path: Path) -> None:
    for args in (["standings"], ["bots", "add", "alpha"]):
        error = one_line_error(run_in_process(*args, "--db", url, cwd=tmp_path))
        assert error.startswith(start), error
        assert "sqlite:///FILE" in error and "postgresql://USER:PASSWORD@HOST" in error
    assert files_in(tmp_path) == []


def test_db_help_names_the_url_forms(tmp_path: Path) -> None:
    shown = run_at(200, "standings", "--help", cwd=tmp_path)
    assert shown.returncode == 0
    assert "sqlite:///FILE or postgresql://USER:PW@HOST[:PORT]/DB" in shown.stdout
    assert "postgres:// and postgresql+psycopg:// work too" in shown.stdout
    readme = (ROOT / "README.md").read_text()
    assert "`--db` takes `sqlite:///FILE` or `postgresql://USER:PW@HOST[:PORT]/DB`" in readme


@pytest.mark.postgres
def test_pasted_postgres_urls_work_against_a_real_server(pg_cluster: PgCluster,
                                                         tmp_path: Path) -> None:
    url = pg_cluster.create_database("everywhere")
    tail = url.removeprefix("postgresql+psycopg://")
    added = run_in_process("bots", "add", "alpha", "--quiet", "--db", f"postgres://{tail}",
                    cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    listed = run_in_process("bots", "list", "--db", f"postgresql://{tail}", cwd=tmp_path)
    assert listed.returncode == 0 and "alpha" in listed.stdout, listed.stderr
    # a read command on a database that does not exist: the server says so, in one line
    missing = tail.rsplit("/", 1)[0] + "/nosuchdb"
    error = one_line_error(run_in_process("standings", "--db", f"postgresql://{missing}",
                                   cwd=tmp_path))
    assert error.startswith("error: cannot open database postgresql+psycopg://")
    assert 'database "nosuchdb" does not exist' in error
    # an existing database without cfarena's tables is not given them by a read command
    bare = pg_cluster.create_database("bare", empty=True).removeprefix("postgresql+psycopg://")
    error = one_line_error(run_in_process("matches", "--db", f"postgresql://{bare}",
                                          cwd=tmp_path))
    assert error.startswith("error: no cfarena database at postgresql+psycopg://")
    assert query(pg_cluster.url("bare"),
                 "select count(*) from pg_tables where schemaname = 'public'") == [(0,)]


# ------------------------------------------------------------- seeds as strings
def test_json_outputs_write_seeds_as_strings(recorded: tuple[Path, str]) -> None:
    tmp, url = recorded
    with sqlite3.connect(tmp / "cfarena.db") as conn:
        stored = dict(conn.execute("select id, seed from matches").fetchall())
        [config] = [json.loads(c) for (c,) in conn.execute("select config from tournaments")]
    matches: Any = run_json("matches", "--db", url, cwd=tmp, in_process=True)
    assert {m["id"]: m["seed"] for m in matches} == {k: str(v) for k, v in stored.items()}
    assert any(int(s) > 2**53 for s in stored.values())  # 63-bit seeds: past JavaScript's
    listed: Any = run_json("tournaments", "--db", url, cwd=tmp, in_process=True)
    [tournament] = listed
    assert isinstance(config["seed"], int)  # stored as a number...
    assert tournament["config"]["seed"] == str(config["seed"])  # ...printed exact
    assert {k: v for k, v in tournament["config"].items() if k != "seed"} == {
        k: v for k, v in config.items() if k != "seed"}
    exported = run_in_process("export", matches[0]["id"], "--db", url, cwd=tmp)
    assert exported.returncode == 0
    assert json.loads(exported.stdout, parse_int=float)["seed"] == str(stored[matches[0]["id"]])


def test_stored_logs_verify_with_string_and_number_seeds(recorded: tuple[Path, str],
                                                         crafted: tuple[Path, str]) -> None:
    for tmp, url in (recorded, crafted):
        verified = run_in_process("verify", "--all", "--db", url, cwd=tmp)
        assert verified.returncode == 0, verified.stdout
        assert re.search(r"(\d+) of \1 log\(s\) genuine", verified.stdout), verified.stdout
    tmp, url = crafted
    old = run_in_process("export", "old", "--db", url, cwd=tmp)  # format 1: as stored, a number
    assert old.returncode == 0 and json.loads(old.stdout)["format"] == 1
    assert isinstance(json.loads(old.stdout)["seed"], int)
    assert run_in_process("verify", "old", "--db", url, cwd=tmp).returncode == 0


def test_the_largest_seed_leaves_exact_through_export_and_html(crafted: tuple[Path, str]
                                                              ) -> None:
    tmp, url = crafted
    exported = run_in_process("export", "m1", "-o", str(tmp / "m1.json"), "--db", url, cwd=tmp)
    assert exported.returncode == 0, exported.stderr
    text = (tmp / "m1.json").read_text()
    assert f'"seed": "{BIG_SEED}"' in text
    assert json.loads(text, parse_int=float)["seed"] == str(BIG_SEED)
    assert run_in_process("verify", "--file", str(tmp / "m1.json"), cwd=tmp).returncode == 0
    made = run_in_process("replay", "m1", "--html", str(tmp / "m1.html"), "--db", url, cwd=tmp)
    assert made.returncode == 0, made.stderr
    assert f'"seed":"{BIG_SEED}"' in (tmp / "m1.html").read_text()
    old = run_in_process("export", "old", "-o", str(tmp / "old.html"), "--db", url, cwd=tmp)
    assert old.returncode == 0
    seed = json.loads((ROOT / "tests" / "replay" / "format1_logs.json").read_text()
                      )["maltese-3p-forfeit"]["seed"]
    assert f'"seed":"{seed}"' in (tmp / "old.html").read_text()  # a string in the viewer


# --------------------------------------------------------------- 80 columns
def _fits(stdout: str, width: int) -> None:
    for line in stdout.splitlines():
        assert len(line) <= width, line
    assert "…" not in stdout


def test_show_is_readable_at_80_columns(crafted: tuple[Path, str]) -> None:
    tmp, url = crafted
    shown = run_at(80, "show", "m1", "--db", url, cwd=tmp)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    _fits(out, 80)
    assert f"seed {BIG_SEED}" in out
    for name in LONG:  # whole, on one line
        assert name in out
    # the rules as key=value pairs, none split, none a Python dict
    assert "{" not in out and "'" not in out.split("fault")[0]
    rules = out[out.index("rules: "):out.index("reason: ")]
    pairs = re.findall(r"[a-z_]+=[a-z_0-9]+", rules)
    assert sorted(pairs) == sorted(f"{k}={v}" for k, v in RULES.items())
    assert rules.startswith("rules: preset=standard, ")
    assert len(rules.strip().splitlines()) > 1  # wrapped (it is longer than 80)
    # every round's points, by round
    for r in range(1, 11):
        assert re.search(rf"^\S*\s*R{r}\s", out, re.M), r


def test_show_keeps_one_table_when_it_fits(crafted: tuple[Path, str]) -> None:
    tmp, url = crafted
    shown = run_at(250, "show", "m1", "--db", url, cwd=tmp)
    assert shown.returncode == 0
    [header] = [line for line in shown.stdout.splitlines() if " R10 " in line]
    assert "bot" in header and "total" in header and "rank" in header
    assert "rules: preset=standard, boneyard_reserve=2, " in shown.stdout


def test_matches_reads_as_results_at_80_columns(crafted: tuple[Path, str],
                                                recorded: tuple[Path, str]) -> None:
    tmp, url = crafted
    listed = run_at(80, "matches", "--db", url, cwd=tmp)
    assert listed.returncode == 0, listed.stderr
    _fits(listed.stdout, 80)
    assert "result" in listed.stdout and "seats (" not in listed.stdout
    with sqlite3.connect(tmp / "cfarena.db") as conn:
        seats = conn.execute(
            "select s.rank, b.name, s.total, s.forfeited from match_seats s join bots b "
            "on b.id = s.bot_id where s.match_id = 'm1' order by s.rank, s.seat").fetchall()
    entries = [f"{rank}. {name} {total}" + (" (forfeit)" if forfeited else "")
               for rank, name, total, forfeited in seats]
    # names longer than the column wrap inside it, whole and in rank order
    pieces: dict[str, list[str]] = {}
    match_id = ""
    for line in listed.stdout.splitlines():
        if line.startswith("│"):
            columns = line.split("│")
            match_id = columns[1].strip() or match_id  # a row goes on over lines
            pieces.setdefault(match_id, []).append(columns[3])
    cell = re.sub(r"\s", "", "".join(pieces["m1"]))  # the lines of the m1 row, rejoined
    assert cell == re.sub(r"\s", "", ", ".join(entries)), (cell, entries)
    assert "(forfeit)" in entries[-1]
    # short names: each entry whole on its line, "1. greedy 112, 2. random 130"
    tmp, url = recorded
    with sqlite3.connect(tmp / "cfarena.db") as conn:
        rows = conn.execute(
            "select s.match_id, s.rank, b.name, s.total from match_seats s join bots b "
            "on b.id = s.bot_id order by s.match_id, s.rank, s.seat").fetchall()
    for width in (80, 200):
        listed = run_at(width, "matches", "--db", url, cwd=tmp)
        _fits(listed.stdout, width)
        lines = listed.stdout.splitlines()
        for match_id in {r[0] for r in rows}:
            entries = [f"{rank}. {name} {total}" for m, rank, name, total in rows
                       if m == match_id]
            [line] = [x for x in lines if x.startswith(f"│ {match_id} ")]
            assert ", ".join(entries) in line, (entries, line)


HELP = [["standings"], ["tournaments"], ["matches"], ["show"], ["replay"], ["verify"],
        ["bots", "add"], ["bots", "show"], ["run-tournament"], ["serve"], []]


@pytest.mark.parametrize("args", HELP, ids=[" ".join(a) or "cfarena" for a in HELP])
def test_flags_show_no_value_in_help(args: list[str], tmp_path: Path) -> None:
    # in-process: typer makes the help's console when it prints, reading COLUMNS then
    shown = run_in_process(*args, "--help", cwd=tmp_path, env={"COLUMNS": "100"})
    assert shown.returncode == 0, shown.stderr
    assert "<bool>" not in shown.stdout
    assert re.search(r"│ --help +Show this message", shown.stdout), shown.stdout
    if args and args[0] in ("standings", "tournaments", "matches", "verify", "run-tournament"):
        assert re.search(r"│ --json {2,}\S", shown.stdout), shown.stdout
    # options with a value still say which
    if args == ["matches"]:
        assert re.search(r"--limit +-n +<int>", shown.stdout)


def test_flags_still_work_as_flags(recorded: tuple[Path, str]) -> None:
    tmp, url = recorded
    listed = run_in_process("matches", "--json", "--db", url, cwd=tmp)
    assert listed.returncode == 0 and json.loads(listed.stdout)
    bad = run_in_process("matches", "--json=maybe", "--db", url, cwd=tmp)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


# ------------------------------------------------------------- a taken bot name
def test_adding_a_taken_bot_name_says_so_and_keeps_the_token(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bots.db'}"
    first = run_in_process("bots", "add", "alpha", "--db", url, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip().splitlines()[-1]
    again = run_in_process("bots", "add", "alpha", "--db", url, cwd=tmp_path)
    error = one_line_error(again)
    assert error.startswith("error: bot 'alpha' already exists")
    assert "give it a new one with `cfarena bots rotate alpha`, or pick another name" in error
    with sqlite3.connect(tmp_path / "bots.db") as conn:
        assert conn.execute("select name, token_hash from bots").fetchall() == [
            ("alpha", hash_token(token))]  # the first token still holds
    # with another --token: the same answer
    other = run_in_process("bots", "add", "alpha", "--token", "another-secret", "--db", url,
                    cwd=tmp_path)
    assert "already exists" in one_line_error(other)


def test_adding_a_bot_again_with_its_own_token_is_a_no_op(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bots.db'}"
    args = ("bots", "add", "beta", "--token", "beta-secret-1", "--db", url)
    first = run_in_process(*args, cwd=tmp_path)
    assert first.returncode == 0 and "registered (id 1)" in first.stdout
    again = run_in_process(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already registered with this token (id 1)" in again.stdout
    with sqlite3.connect(tmp_path / "bots.db") as conn:
        assert conn.execute("select count(*) from bots").fetchone() == (1,)
