"""Names a ladder bot and a tournament's entrant share, as the CLI takes them: the
`bots` commands are the ladder's and say where an entrant-only name is; `--bot
NAME=ladder:BOT` is refused with what to do (in process: no process behaviour)."""

from __future__ import annotations

from pathlib import Path

from cfarena.server.storage import open_database

from .helpers import run_in_process
from .test_cli_everywhere import one_line_error


def test_a_name_only_a_tournament_has_is_no_ladder_bot(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cfarena.db'}"
    db = open_database(url)
    try:
        final = db.create_tournament("Final", {})
        db.register_entrants(final, {"alice": "./alice"})
    finally:
        db.close()
    for args in (["bots", "show", "alice"], ["bots", "revoke", "alice"],
                 ["bots", "rotate", "alice"]):
        error = one_line_error(run_in_process(*args, "--db", url, cwd=tmp_path))
        assert error == (f"error: no ladder bot named 'alice'; tournament(s) {final} have an "
                         "entrant of that name: see `cfarena standings --tournament ID`")
    ladder = run_in_process("standings", "--db", url, cwd=tmp_path)  # the ladder's: empty
    assert ladder.returncode == 0 and ladder.stdout == "", ladder.stdout  # no empty table
    assert ladder.stderr == ("no ladder matches here; a tournament's table is `cfarena "
                             "standings --tournament ID` (see `cfarena tournaments`)\n")
    listed = run_in_process("bots", "list", "--db", url, cwd=tmp_path)
    assert listed.returncode == 0 and "alice" not in listed.stdout
    added = run_in_process("bots", "add", "alice", "--db", url, cwd=tmp_path)
    assert added.returncode == 0, added.stderr  # the ladder may take the name


def test_seating_a_ladder_bot_in_a_tournament_is_refused(tmp_path: Path) -> None:
    error = one_line_error(run_in_process("run-tournament", "--bot", "alice=ladder:alice",
                                          "--bot", "random", cwd=tmp_path))
    assert error.startswith("error: --bot alice=ladder:alice: seating a registered ladder "
                            "bot is not supported"), error
    assert "alice=COMMAND" in error
    assert list(tmp_path.iterdir()) == []  # refused before any database is made
