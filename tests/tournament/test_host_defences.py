"""Where a host defence cannot be applied, the run says so and the stored tournament does
not claim it (units: the real drop and the real runs are in tests/fairplay/test_page_cache.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cfarena.engine import Rules
from cfarena.server.sandbox.host_reset import (
    OFF_ENV,
    HostReset,
    HostResetError,
    reset_problem,
    turned_off,
)
from cfarena.server.storage import open_database
from cfarena.server.tournament import BotSpec, TournamentConfig, config
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.tournament_player import TournamentPlayer


@pytest.fixture(autouse=True)
def _reset_not_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check the reset itself: not turned off as for the rest of the suite
    (tests/conftest.py)."""
    monkeypatch.delenv(OFF_ENV, raising=False)


def test_the_reset_writes_3_to_drop_caches_and_says_when_it_cannot(tmp_path: Path) -> None:
    knob = tmp_path / "drop_caches"
    knob.write_text("")
    reset = HostReset(path=knob)
    reset.drop()
    assert knob.read_text() == "3" and reset.drops == 1  # page cache and slab
    with pytest.raises(HostResetError, match="cannot drop the host's caches"):
        HostReset(path=tmp_path).drop()  # a directory: the kernel's refusal, in one line
    assert "does not exist" in (reset_problem(tmp_path / "none") or "")


def test_a_missing_reset_is_announced_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    launch = Launch()
    monkeypatch.setattr(config, "reset_problem", lambda: None)
    assert config.missing_defences(launch) == []
    held = config.host_defences(launch)
    assert (held["page_cache_reset"], held["seccomp_cache_probes"]) == (True, True)
    monkeypatch.setattr(config, "reset_problem", lambda: "not root")
    [line] = config.missing_defences(launch)
    assert "not root" in line and "page cache" in line
    unsandboxed = config.host_defences(Launch(sandbox=False))
    assert not any(unsandboxed.values()), unsandboxed


@pytest.mark.parametrize(("variable", "value", "said"), [
    (OFF_ENV, "of", True), (OFF_ENV, "disabled", True), ("CFARENA_CGROUPS", "0ff", True),
    (OFF_ENV, "off", False), (OFF_ENV, " NO ", False), (OFF_ENV, "on", False),
    ("CFARENA_CGROUPS", "true", False), (OFF_ENV, "", False)])
def test_a_defence_switch_set_to_a_value_not_understood_is_announced(
        monkeypatch: pytest.MonkeyPatch, variable: str, value: str, said: bool) -> None:
    monkeypatch.setattr(config, "reset_problem", lambda: None)
    monkeypatch.setattr(config.cgroups, "defences", lambda: {"memory": True})
    monkeypatch.setenv(variable, value)
    lines = config.missing_defences(Launch())
    misread = [line for line in lines if "is not understood" in line]
    if said:  # a misspelt "off" leaves the defence on, and says so in one line
        assert misread == [f"{variable}={value!r} is not understood (0, off, no, false turn "
                           "the defence off; 1, on, yes, true leave it on): it stays on"]
        assert not turned_off(variable)
    else:
        assert misread == []


@pytest.mark.parametrize("value", ["off", "0", "NO", "false"])
def test_the_reset_turned_off_by_the_environment_is_announced_and_not_claimed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str) -> None:
    knob = tmp_path / "drop_caches"
    knob.write_text("")
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # as root, whoever runs the test
    assert reset_problem(knob) is None
    monkeypatch.setenv(OFF_ENV, value)
    assert reset_problem(knob) == f"turned off by {OFF_ENV}"
    [line] = [line for line in config.missing_defences(Launch()) if "page cache" in line]
    assert f"turned off by {OFF_ENV}" in line
    assert config.host_defences(Launch())["page_cache_reset"] is False
    monkeypatch.setenv(OFF_ENV, "on")
    assert reset_problem(knob) is None


def test_a_defence_stays_held_only_while_every_machine_gave_it(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        tid = db.create_tournament("t", {"defences": {"page_cache_reset": True,
                                                      "seccomp_cache_probes": True}})
        db.weaken_tournament_defences(tid, {"page_cache_reset": False,
                                            "seccomp_cache_probes": True, "memory_cgroup": True})
        db.weaken_tournament_defences(tid, {"page_cache_reset": True})  # a later machine
        info = db.get_tournament(tid)
    finally:
        db.close()
    assert info is not None
    assert info.config["defences"] == {"page_cache_reset": False, "seccomp_cache_probes": True,
                                       "memory_cgroup": True}


def test_fewer_bots_than_seats_are_refused_unless_filled() -> None:
    three = (BotSpec("random"), BotSpec("greedy"), BotSpec("smart"))
    refused = TournamentConfig(bots=three, rules=Rules.preset("standard"), players=4)
    assert "--fill" in (refused.seats_problem() or "")
    assert refused.fill_note() is None
    allowed = TournamentConfig(bots=three, rules=Rules.preset("standard"), players=4,
                               fill=True)
    assert allowed.seats_problem() is None
    # stored as the seats a bot holds: the identity of tournaments allowed by the number
    assert allowed.to_json()["seats_per_bot"] == 2
    assert allowed.fill_note() == ("--fill: 3 bots at 4-seat tables: random greedy smart "
                                   "random (random 2 seats of every match)")
    assert "seats_per_bot" not in refused.to_json()  # the identity of older tournaments
    enough = TournamentConfig(bots=three, rules=Rules.preset("standard"), players=3,
                              fill=True)  # nothing to fill: the same tournament as without
    assert enough.fill_note() is None
    assert enough.to_json() == TournamentConfig(bots=three, rules=Rules.preset("standard"),
                                                players=3).to_json()


def test_a_job_of_a_later_phase_waits_as_long_as_it_takes_and_failures_are_counted() -> None:
    from procrastinate.jobs import Job

    from cfarena.server.tournament.worker import MatchRetry, PhaseNotOpen

    strategy = MatchRetry(0.5)
    job = Job(id=7, queue="tournament-1", lock=None, queueing_lock=None,
              task_name="cfarena.play_match", attempts=40)
    for _ in range(10):  # however many attempts procrastinate has counted
        assert strategy.get_retry_decision(exception=PhaseNotOpen("x"), job=job) is not None
    decisions = [strategy.get_retry_decision(exception=RuntimeError("x"), job=job)
                 for _ in range(4)]
    assert [d is not None for d in decisions] == [True, True, True, False]  # 3 retries


def test_a_process_that_cannot_drop_still_takes_the_players_lock(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A process with the reset turned off (or not root) still plays bots on the host: a
    process that drops the caches must see it and not claim the reset, in either order."""
    from cfarena.server.sandbox import host_reset

    monkeypatch.setenv(OFF_ENV, "off")
    off = host_reset.claim_host_reset(lock_dirs=(tmp_path,))
    assert off.cannot == f"turned off by {OFF_ENV}" and off.sole
    with pytest.raises(HostResetError, match="turned off"):
        off.drop()  # it never drops
    dropper = HostReset(lock_dirs=(tmp_path,))
    assert dropper.claim() is not None and not dropper.sole  # the off process holds it
    dropper.release()
    off.release()
    assert dropper.claim() is None and not dropper.shared()  # alone
    # an off process starts while it plays
    later_off = host_reset.claim_host_reset(lock_dirs=(tmp_path,))
    assert not later_off.sole and dropper.shared()
    later_off.release()
    assert not dropper.shared()
    dropper.release()


def test_only_the_one_process_playing_on_the_host_claims_the_reset(tmp_path: Path) -> None:
    first, second = HostReset(lock_dirs=(tmp_path,)), HostReset(lock_dirs=(tmp_path,))
    assert first.claim() is None and first.sole and not first.shared()
    why = second.claim()  # another holder: not claimed, and the holder sees it
    assert why is not None and f"(pid {os.getpid()})" in why and not second.sole
    assert first.shared() and second.shared()
    second.release()
    assert not first.shared()  # alone again
    first.release()
    assert second.claim() is None  # the lock went with the first
    second.release()
    why = HostReset(lock_dirs=(tmp_path / "none",)).claim()
    assert why is not None and "cannot be created" in why


class _Pool:
    """A tournament's pool, as a phase change sees it (`enter_phase`, `new_phase`,
    `playing`, `restart`)."""

    def __init__(self, playing: bool) -> None:
        self.in_play = playing
        self.calls: list[str] = []

    async def new_phase(self, keep_playing: bool = False) -> None:
        self.calls.append("keep_playing" if keep_playing else "all")

    def playing(self) -> bool:
        return self.in_play

    def enter_phase(self, phase: int) -> None:
        pass  # what it starts ahead is not under test here

    async def restart(self) -> None:
        self.calls.append("restart")


def _player(db: Any, host: HostReset, pool: _Pool, tournament_id: int) -> TournamentPlayer:
    player = TournamentPlayer(server=Any, db=db, config=Any, launch=Launch(),  # type: ignore[arg-type]
                              concurrency=1, host=host, phase=0)
    player.pool = pool  # type: ignore[assignment]
    player.room = SimpleNamespace(tournament_id=tournament_id)  # type: ignore[assignment]
    return player


@pytest.mark.parametrize("other_in_play", [False, True])
def test_a_phase_change_stops_the_other_tournaments_of_a_worker_too(
        tmp_path: Path, other_in_play: bool, caplog: pytest.LogCaptureFixture) -> None:
    knob = tmp_path / "drop_caches"
    knob.write_text("")
    host = HostReset(path=knob, lock_dirs=(tmp_path,))
    assert host.claim() is None
    weakened: list[tuple[int, dict[str, bool]]] = []
    db = SimpleNamespace(weaken_tournament_defences=lambda t, held: weakened.append((t, held)))
    entering, other = _Pool(playing=False), _Pool(playing=other_in_play)
    players: list[TournamentPlayer] = []
    players += [_player(db, host, entering, 1), _player(db, host, other, 2)]
    for player in players:
        player.neighbours = lambda: players
    try:
        asyncio.run(players[0].enter_phase(1))
    finally:
        host.release()
    assert knob.read_text() == "3"
    assert entering.calls == ["all", "restart"]
    assert other.calls == ["keep_playing", "restart"]  # its idle and warm ones stopped
    # the reset holds for tournament 1 unless tournament 2 was in a match at the drop
    assert players[0].reset_held is not other_in_play
    assert [t for t, held in weakened if not held["page_cache_reset"]] == \
        ([1] if other_in_play else [])
    warnings = [r for r in caplog.records if "does not hold" in r.getMessage()]
    assert len(warnings) == (1 if other_in_play else 0)


@pytest.mark.parametrize("replayed", [0, 1])
def test_a_match_of_an_earlier_phase_played_again_is_played_after_a_reset(
        tmp_path: Path, replayed: int) -> None:
    """A bot test plays batch after batch; a match the referee's stalls voided is played
    again in the next round, after later phases played its deal's other rotations. With
    `earlier` (what `sprt_runner._play_local` passes: nothing is playing between
    batches) its phase is entered anew: processes stopped, caches dropped. Without it,
    as a queue worker enters phases, an earlier phase changes nothing."""
    knob = tmp_path / "drop_caches"
    knob.write_text("")
    host = HostReset(path=knob, lock_dirs=(tmp_path,))
    assert host.claim() is None
    db = SimpleNamespace(weaken_tournament_defences=lambda t, held: None)
    pool = _Pool(playing=False)
    player = _player(db, host, pool, 1)
    player.neighbours = lambda: [player]
    try:
        asyncio.run(player.enter_phase(2))
        assert pool.calls == ["all", "restart"]
        knob.write_text("")
        asyncio.run(player.enter_phase(replayed))  # a worker's way: nothing happens
        asyncio.run(player.enter_phase(2, earlier=True))  # not earlier: nothing either
        assert (pool.calls, knob.read_text(), player.phase) == (["all", "restart"], "", 2)
        asyncio.run(player.enter_phase(replayed, earlier=True))
    finally:
        host.release()
    assert pool.calls == ["all", "restart"] * 2
    assert knob.read_text() == "3" and player.phase == replayed
