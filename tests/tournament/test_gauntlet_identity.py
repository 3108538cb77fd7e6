"""A gauntlet's schedule (only NEW's tables, every rotation kept), and a tournament's
identity: the files its bots run are part of it, so a changed file starts a new
tournament (and says which bot's files changed) while old tournaments keep working."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Iterator
from math import comb
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.server.storage import Database, TournamentStatus, config_hash, open_database
from cfarena.server.tournament import BotSpec, TournamentConfig, TournamentError
from cfarena.server.tournament.config import bot_files
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import round_robin
from cfarena.server.tournament.stored_tournament import (
    NewTournament,
    create_tournament,
    files_note,
    find_tournament,
    local_files_problem,
)
from cfarena.server.tournament.tournament_player import stored_config

BOTS = ("ann", "bob", "cat", "dan", "eve")


@pytest.mark.parametrize(("bots", "players", "games"), [
    (BOTS, 2, 1), (BOTS, 3, 2), (BOTS, 4, 1), (BOTS[:4], 4, 2), (BOTS[:3], 4, 1),
])
def test_a_gauntlet_plays_only_new_s_tables_with_every_rotation(
        bots: tuple[str, ...], players: int, games: int) -> None:
    new = bots[-1]
    gauntlet = round_robin(bots, players, games, seed=11, gauntlet=new)
    full = round_robin(bots, players, games, seed=11)
    assert all(new in m.seats for m in gauntlet)
    # the round-robin's matches with NEW, keys and deals as there: nothing else
    assert gauntlet == [m for m in full if new in m.seats]
    tables = comb(len(bots) - 1, players - 1) if len(bots) >= players else 1
    assert len(gauntlet) == tables * players * games
    # every rotation of every deal is played: each seat of it holds NEW once
    by_deal: dict[int, list[tuple[str, ...]]] = {}
    for m in gauntlet:
        by_deal.setdefault(m.seed, []).append(m.seats)
    for seatings in by_deal.values():
        assert len(seatings) == players
        held = [seat for seats in seatings for seat, bot in enumerate(seats) if bot == new]
        assert sorted(set(held)) == list(range(players))
    # the field never plays itself: the tables left out are exactly the field's own
    left_out = {m.seats[0:players] for m in full if m not in gauntlet}
    field = [b for b in bots if b != new]
    assert {frozenset(s) for s in left_out} == (
        {frozenset(t) for t in itertools.combinations(field, players)}
        if len(bots) >= players else set())


def test_a_gauntlet_of_a_bot_that_is_not_playing_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of the bots"):
        round_robin(BOTS, 3, 1, seed=0, gauntlet="zed")
    config = TournamentConfig(bots=(BotSpec("greedy"), BotSpec("random")),
                              rules=Rules.preset("standard"), players=2, gauntlet="smart")
    assert (config.seats_problem() or "").startswith("--gauntlet smart: not one of the bots")


def test_the_gauntlet_is_part_of_the_identity_and_reads_back() -> None:
    bots = (BotSpec("greedy"), BotSpec("random"), BotSpec("smart"))
    plain = TournamentConfig(bots=bots, rules=Rules.preset("standard"), players=2)
    gauntlet = TournamentConfig(bots=bots, rules=Rules.preset("standard"), players=2,
                                gauntlet="smart")
    assert "gauntlet" not in plain.to_json()  # the identity of older tournaments
    assert gauntlet.to_json()["gauntlet"] == "smart"
    assert config_hash(gauntlet.to_json()) != config_hash(plain.to_json())
    again, _ = stored_config({**gauntlet.to_json(), "seed": 5, "seed_fixed": False})
    assert again.gauntlet == "smart" and again.schedule(5) == gauntlet.schedule(5)


@pytest.mark.parametrize(("command", "named"), [
    ("python -m cfarena.sdk run mine.py", ["mine.py"]),
    ("python -m cfarena.sdk run mine.py:Bot", ["mine.py"]),  # FILE:Class
    ("python -m cfarena.sdk run other.py:Bot", []),  # no such file
    ("python3 'mine.py' --weights data/w.bin", ["data/w.bin", "mine.py"]),
    ("python -m mypkg.bot", []),  # a module by name: not hashed
    ("./run.sh data", ["./run.sh"]),  # a directory is not hashed
])
def test_the_files_a_command_names_are_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              command: str, named: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    for name, text in (("mine.py", "print(1)\n"), ("data/w.bin", "w"), ("run.sh", "x")):
        (tmp_path / name).write_text(text)
    files = dict(bot_files(BotSpec("mine", command)))
    assert sorted(files) == named
    for name in named:
        assert files[name] == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()


def test_a_bundled_bot_is_hashed_by_its_module_file() -> None:
    import cfarena.bots.greedy as module

    [(name, digest)] = bot_files(BotSpec("greedy"))
    assert name == "cfarena.bots.greedy"
    assert digest == hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with contextlib.closing(open_database(f"sqlite:///{tmp_path / 'c.db'}")) as store:
        yield store


def _config(tmp_path: Path) -> TournamentConfig:
    command = f"python -m cfarena.sdk run {tmp_path / 'mine.py'}"
    return TournamentConfig(bots=(BotSpec("mine", command).hashed(), BotSpec("random").hashed()),
                            rules=Rules.preset("standard"), players=2, seed=3)


def test_an_edited_bot_file_makes_a_new_tournament_and_says_which(tmp_path: Path,
                                                                   db: Database) -> None:
    launch = Launch(sandbox=False)
    (tmp_path / "mine.py").write_text("v1\n")
    before = _config(tmp_path)
    tid, _ = create_tournament(before, db, launch, NewTournament.of(before))
    found = find_tournament(before, db, None, launch)
    assert found is not None and found.id == tid  # the same command: the same tournament
    assert files_note(before, db, launch) is None
    (tmp_path / "mine.py").write_text("v2\n")
    after = _config(tmp_path)
    assert find_tournament(after, db, None, launch) is None  # neither resumed nor reported
    note = files_note(after, db, launch)
    assert note == (f"the files of bot mine ({tmp_path / 'mine.py'}) changed since "
                    f"tournament #{tid}: a new tournament starts (`--resume {tid}` is refused)")
    with pytest.raises(TournamentError, match=r"different configuration \(the files of bot "
                       r"mine .*\)"):
        find_tournament(after, db, tid, launch)
    again, _ = create_tournament(after, db, launch, NewTournament.of(after))
    assert find_tournament(after, db, None, launch).id == again  # type: ignore[union-attr]


@pytest.mark.parametrize("status", [TournamentStatus.INTERRUPTED, TournamentStatus.FINISHED])
def test_a_tournament_stored_before_files_were_hashed_keeps_working(
        tmp_path: Path, db: Database, status: TournamentStatus) -> None:
    """Unfinished, the same command resumes it; finished, it is not reported again (what
    its bots ran is unknown): a new one starts, and the run says why."""
    launch = Launch(sandbox=False)
    (tmp_path / "mine.py").write_text("v1\n")
    config = _config(tmp_path)
    legacy = config.to_json(launch, files=False)
    assert all("files" not in bot for bot in legacy["bots"])
    tid = db.create_tournament("old", {**legacy, "seed": 3}, identity=legacy)
    db.set_tournament_status(tid, status)
    found = find_tournament(config, db, None, launch)
    assert find_tournament(config, db, tid, launch).id == tid  # type: ignore[union-attr]
    if status is TournamentStatus.FINISHED:
        assert found is None
        assert files_note(config, db, launch) == (
            f"tournament #{tid} is finished and was stored before bots' files were "
            "recorded: a new tournament starts")
    else:
        assert found is not None and found.id == tid
        assert files_note(config, db, launch) is None


def test_a_stored_tournament_reads_back_its_files_and_filling() -> None:
    config = TournamentConfig(
        bots=(BotSpec("greedy").hashed(), BotSpec("mine", "x", (("a.py", "ab" * 32),))),
        rules=Rules.preset("standard"), players=3, fill=True)
    again, launch = stored_config({**config.to_json(), "seed": 1, "seed_fixed": False})
    assert again.bots == config.bots and again.fill
    assert again.to_json(launch) == config.to_json()


def test_a_worker_whose_copy_of_a_bot_file_differs_refuses_to_play_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("mine.py").write_text("print(1)\n")
    config = TournamentConfig(bots=(BotSpec("greedy").hashed(),
                                    BotSpec("mine", "python mine.py").hashed()),
                              rules=Rules.preset("standard"), players=2)
    stored, _launch = stored_config({**config.to_json(), "seed": 1, "seed_fixed": False})
    assert local_files_problem(stored) is None  # the same files here
    Path("mine.py").write_text("print(2)\n")  # another machine's copy, edited
    assert local_files_problem(stored) == (
        "the files of bot mine (mine.py) on this machine differ from those the tournament "
        "was created with: copy the same files here")
    Path("mine.py").unlink()
    assert "bot mine (mine.py)" in (local_files_problem(stored) or "")


def test_a_bundled_bot_s_settings_are_part_of_the_identity_and_read_back() -> None:
    """A budget given to the bundled montecarlo is stored with the tournament: another
    budget is another tournament, and a resume or a worker reads the same one back."""
    def config(*settings: tuple[str, str]) -> TournamentConfig:
        return TournamentConfig(bots=(BotSpec("greedy"), BotSpec("montecarlo",
                                                                   settings=settings)),
                                rules=Rules.preset("standard"), players=2)
    plain, fast = config(), config(("CFARENA_MC_BUDGET_MS", "2"))
    assert all("settings" not in b for b in plain.to_json()["bots"])  # older identities
    assert fast.to_json()["bots"][1]["settings"] == {"CFARENA_MC_BUDGET_MS": "2"}
    assert len({config_hash(c.to_json()) for c in
                (plain, fast, config(("CFARENA_MC_BUDGET_MS", "3")))}) == 3
    again, launch = stored_config({**fast.to_json(), "seed": 1, "seed_fixed": False})
    assert again.bots == fast.bots and again.to_json(launch) == fast.to_json()
