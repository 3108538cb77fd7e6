"""`cfarena show ID` (and `export ID`) with the id a bot was given: a tournament
match's opaque id (what its bots log, `match.bot_ids.wire_match_id`, the id
`tournament/match_room.py` tells them) finds the stored match, as its stored id does
(in-process: a read starts no process)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cfarena.server.storage import open_database
from tests.cli.helpers import run_cli, run_in_process
from tests.web.entrant_games import OTHER_SEED, Tournament, store_tournament


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tournament]:
    path = tmp_path_factory.mktemp("show-ids") / "cfarena.db"
    with open_database(f"sqlite:///{path}") as db:
        return path, store_tournament(db)


def _show(path: Path, *args: str) -> tuple[int, str, str]:
    result = run_in_process("show", *args, "--db", f"sqlite:///{path}", cwd=path.parent)
    return result.returncode, result.stdout, result.stderr


def test_show_finds_a_tournament_match_by_the_id_its_bots_logged(
        stored: tuple[Path, Tournament]) -> None:
    path, t = stored
    for match_id, seed in ((t.first, None), (t.others, OTHER_SEED)):
        given = t.wire_id(match_id) if seed is None else t.wire_id(match_id, seed)
        code, out, err = _show(path, given)
        assert code == 0 and err == "", err
        assert out.startswith(f"match {match_id}")
        assert f"its bots were given the id {given}" in out
        assert _show(path, match_id)[1] == out  # the same as by its stored id
        code, out, _err = _show(path, given, "--json")
        shown = json.loads(out)
        assert (shown["id"], shown["bot_match_id"]) == (match_id, given)
        exported = run_in_process("export", given, "--db", f"sqlite:///{path}", cwd=path.parent)
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout) == t.logs[match_id]


def test_an_id_no_bot_was_given_is_no_match(stored: tuple[Path, Tournament]) -> None:
    path, t = stored
    for given in ("0123456789abcdef", t.wire_id(t.first)[:-1], t.wire_id(t.first).upper()):
        code, out, err = _show(path, given)
        assert code == 2 and out == "" and f"no match {given!r}" in err, (given, err)


def test_an_id_two_tournaments_of_one_seed_gave_names_both(tmp_path: Path) -> None:
    """A rehearsal and a final dealt from the same seed give their bots the same ids:
    `show` names both matches instead of picking one, and an entrant's lookup finds
    only its own tournament's match."""
    path = tmp_path / "cfarena.db"
    with open_database(f"sqlite:///{path}") as db:
        rehearsal, final = store_tournament(db), store_tournament(db)
        given = final.wire_id(final.first)
        assert given == rehearsal.wire_id(rehearsal.first)
        assert db.match_ids_given(given) == sorted([rehearsal.first, final.first])
        final_alpha = next(i for i, n in db.tournament_bots(final.id).items() if n == "alpha")
        assert db.match_ids_given(given, final_alpha) == [final.first]
    code, out, err = _show(path, given)
    assert (code, out) == (2, "")
    assert err == (f"error: 2 matches gave their bots the id {given!r} (tournaments dealt "
                   f"from one seed): {', '.join(sorted([rehearsal.first, final.first]))}; "
                   "name one by its stored id\n")


def test_show_finds_the_match_of_the_id_a_real_bot_logged(tmp_path: Path) -> None:
    """A real tournament (bundled bots, unsandboxed: no sandbox behaviour is under test):
    the match id each bot logged is the one `show` looks the match up by."""
    db = f"sqlite:///{tmp_path / 'cfarena.db'}"
    played = run_cli("run-tournament", "--bot", "greedy", "--bot", "random", "-k", "2",
                     "--rule", "rounds=single", "-g", "1", "--no-sandbox", "--db", db,
                     cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    with open_database(db) as opened:
        stored = {m.id: opened.seat_logs(m.id) for m in opened.list_matches()}
    assert len(stored) == 2
    for match_id, seat_logs in stored.items():
        logged = {found for x in seat_logs
                  for found in re.findall(r"match ([0-9a-f]{16}): seat", x.output)}
        assert len(logged) == 1 and match_id not in logged, (match_id, logged)
        code, out, err = _show(tmp_path / "cfarena.db", logged.pop())
        assert code == 0 and out.startswith(f"match {match_id} "), err
