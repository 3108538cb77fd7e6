"""A bundled bot's settings (`BundledBot.settings`: montecarlo's thinking budget), taken
from the organiser's environment: they reach that bundled bot's processes and no other
bot's, never over the allow-list's own variables; they are part of the tournament's
identity, so a changed value starts a new tournament and the run says which changed.
(The end-to-end proof, a sandboxed montecarlo thinking 2 ms: tests/cli/test_cli_tournament.py
`test_default_run_with_no_arguments`; a bad value refused: tests/cli/test_cli_bad_input.py.)"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from cfarena.bots import BUNDLED, settings_problem
from cfarena.engine import Rules
from cfarena.server.cli.tournament import parse_bot
from cfarena.server.referee import RefereeServer
from cfarena.server.sandbox import SandboxLimits
from cfarena.server.storage import Database, open_database
from cfarena.server.tournament import BotSpec, TournamentConfig, TournamentError
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.process_maker import ProcessMaker
from cfarena.server.tournament.stored_tournament import (
    NewTournament,
    create_tournament,
    files_note,
    find_tournament,
)
from cfarena.server.tournament.tournament_player import stored_config

BUDGET = "CFARENA_MC_BUDGET_MS"


def test_every_bundled_bot_with_settings_checks_them() -> None:
    with_settings = [bot for bot in BUNDLED.values() if bot.settings]
    assert [bot.name for bot in with_settings] == ["montecarlo"]
    for bot in with_settings:
        assert callable(getattr(importlib.import_module(bot.module), "settings_problem", None))
    assert settings_problem("montecarlo", {BUDGET: "2"}) is None
    assert "finite number" in (settings_problem("montecarlo", {BUDGET: "1e400"}) or "")
    assert settings_problem("greedy", {}) is None


def test_a_setting_reaches_only_its_bundled_bot_and_never_the_allow_list(
        tmp_path: Path) -> None:
    # a raw mapping, as if a stored tournament had been written by hand: PATH and the
    # credential stay the arena's
    planted = {"PATH": "/evil", "CFARENA_TOKEN": "stolen", "LD_PRELOAD": "/evil.so",
               "PYTHONPATH": "/evil"}
    maker = ProcessMaker(cast(RefereeServer, None), {"montecarlo": None, "mine": "./bot"},
                         sandbox=True, limits=SandboxLimits(), cwd=tmp_path, binds=(),
                         settings={"montecarlo": {BUDGET: "2", **planted},
                                   "mine": {BUDGET: "3", **planted}})
    mc, mine = maker.env("montecarlo", "t1"), maker.env("mine", "t2")
    assert mc[BUDGET] == "2" and BUDGET not in mine
    assert mc["PATH"] == mine["PATH"] != "/evil" and mc["CFARENA_TOKEN"] == "t1"
    for env in (mc, mine):
        assert "LD_PRELOAD" not in env and "PYTHONPATH" not in env, env
    assert "CFARENA_TOKEN" not in maker.env("montecarlo", "")  # a fork server's start


def test_only_a_bundled_bot_takes_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUDGET, " 2 ")
    assert parse_bot("montecarlo").settings == ((BUDGET, "2"),)
    assert parse_bot("montecarlo=python -m cfarena.sdk run x.py").settings == ()
    assert parse_bot("greedy").settings == ()
    monkeypatch.setenv(BUDGET, " ")  # blank: not given
    assert parse_bot("montecarlo").settings == ()
    with pytest.raises(ValueError, match="no setting PATH"):
        BotSpec("montecarlo", settings=(("PATH", "/evil"),))
    with pytest.raises(ValueError, match=f"no setting {BUDGET}"):
        BotSpec("mine", "python mine.py", settings=((BUDGET, "2"),))
    config = TournamentConfig(bots=(BotSpec("greedy"), BotSpec("random")),
                              rules=Rules.preset("standard"), players=2)
    stored = config.to_json()
    stored["bots"][0]["settings"] = {BUDGET: "2"}  # greedy has none
    with pytest.raises(TournamentError, match="cannot be read: bot greedy has no setting"):
        stored_config({**stored, "seed": 1, "seed_fixed": False})
    config = TournamentConfig(bots=(BotSpec("montecarlo", settings=((BUDGET, "x"),)),
                                    BotSpec("random")), rules=Rules.preset("standard"),
                              players=2)
    with pytest.raises(TournamentError, match=f"bot montecarlo: {BUDGET} must be a number"):
        stored_config({**config.to_json(), "seed": 1, "seed_fixed": False})


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with contextlib.closing(open_database(f"sqlite:///{tmp_path / 'c.db'}")) as store:
        yield store


def _config(*settings: tuple[str, str]) -> TournamentConfig:
    return TournamentConfig(bots=(BotSpec("greedy").hashed(),
                                  BotSpec("montecarlo", settings=settings).hashed()),
                            rules=Rules.preset("standard"), players=2, seed=3)


def test_a_changed_setting_is_a_new_tournament_and_the_run_says_which(db: Database) -> None:
    launch = Launch(sandbox=False)
    before = _config((BUDGET, "200"))
    tid, _ = create_tournament(before, db, launch, NewTournament.of(before))
    assert find_tournament(before, db, None, launch).id == tid  # type: ignore[union-attr]
    assert files_note(before, db, launch) is None
    after = _config()  # the variable no longer exported
    assert find_tournament(after, db, None, launch) is None
    assert files_note(after, db, launch) == (
        f"montecarlo's {BUDGET} changed (200 -> unset) since tournament #{tid}: a new "
        f"tournament starts (`--resume {tid}` is refused)")
    with pytest.raises(TournamentError, match=rf"different configuration \(montecarlo's "
                       rf"{BUDGET} changed \(200 -> unset\): set it as then\)"):
        find_tournament(after, db, tid, launch)
    other = TournamentConfig(bots=before.bots, rules=Rules.preset("standard"), players=2,
                             seed=4)  # another tournament altogether: nothing to say
    assert files_note(other, db, launch) is None
    # a bot of that name that is not bundled now, and a stored entry written by hand:
    # a new tournament, nothing to say, no traceback
    mine = TournamentConfig(bots=(before.bots[0], BotSpec("montecarlo", "python mc.py")),
                            rules=Rules.preset("standard"), players=2, seed=3)
    assert files_note(mine, db, launch) is None
    odd = before.to_json(launch)
    odd["bots"][1]["settings"] = "not a mapping"
    db.create_tournament("odd", {**odd, "seed": 3}, identity=odd)
    assert files_note(mine, db, launch) is None
