"""What a worker on another machine plays: the tournament read back from storage is the
one that was created (same identity), and a deal's queue lock names no seed."""

from __future__ import annotations

import pytest

from cfarena.engine import Rules
from cfarena.server.referee import TimeControl
from cfarena.server.sandbox import SandboxLimits
from cfarena.server.tournament import BotSpec, TournamentConfig, TournamentError
from cfarena.server.tournament.job_queue import deal_lock
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import round_robin
from cfarena.server.tournament.tournament_player import stored_config


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_stored_tournament_reads_back_as_the_same_tournament(sandbox: bool) -> None:
    config = TournamentConfig(
        bots=(BotSpec("greedy"), BotSpec("mine", "python -m cfarena.sdk run /opt/mine.py")),
        rules=Rules.preset("maltese").with_options(rounds="half"), players=3, games=5,
        seed=None, time_control=TimeControl(250, 1000, 50, 2))
    launch = Launch(sandbox=sandbox, limits=SandboxLimits(memory_mib=300, cpu_seconds=40,
                                                          processes=9))
    stored = {**config.to_json(launch), "seed": 123, "seed_fixed": False}
    again, again_launch = stored_config(stored)
    assert again.to_json(again_launch) == config.to_json(launch)
    assert again.bots == config.bots and again.time_control == config.time_control
    assert again_launch.sandbox is sandbox


def test_the_descriptor_limit_is_stored_and_read_back() -> None:
    """A --max-files other than the default is part of the tournament; the default is
    not written, so a tournament stored before the limit existed keeps its identity."""
    config = TournamentConfig(bots=(BotSpec("greedy"), BotSpec("random")),
                              rules=Rules.preset("standard"), players=2)
    default = Launch(sandbox=True, limits=SandboxLimits())
    assert "files" not in config.to_json(default)["sandbox"]
    assert stored_config(config.to_json(default))[1].limits.files == 256
    fewer = Launch(sandbox=True, limits=SandboxLimits(files=64))
    stored = config.to_json(fewer)
    assert stored["sandbox"]["files"] == 64
    assert stored_config(stored)[1].limits.files == 64


def test_an_unreadable_stored_tournament_is_one_clear_error() -> None:
    with pytest.raises(TournamentError, match="cannot be read"):
        stored_config({"bots": [{"name": "x"}]})


def test_the_deal_lock_names_the_game_and_never_the_seed() -> None:
    plan = round_robin(["a", "b", "c"], 2, 3, seed=99)
    locks = {m.key: deal_lock(7, m.key) for m in plan}
    # one lock per deal: every rotation and table of game g shares it
    for match in plan:
        assert locks[match.key] == f"T7-g{match.game}"
    assert len(set(locks.values())) == 3
    assert not any(str(m.seed) in lock for m in plan for lock in locks.values())
