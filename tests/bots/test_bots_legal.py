"""Every sample bot only ever answers with an offered move, for every preset and 2-8 players."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from cfarena.bots.greedy import GreedyBot
from cfarena.bots.montecarlo import MonteCarloBot
from cfarena.bots.random_bot import RandomBot
from cfarena.bots.smart import SmartBot
from cfarena.engine import Move, MoveKind, Rules
from cfarena.sdk import Bot, Turn
from cfarena.sdk.cli import load_bot_class
from cfarena.sdk.local import play_match

VARIANTS: dict[str, dict[str, Any]] = {
    "standard": {},
    "maltese": {},  # play_drawn = may: a drawn tile may be kept (PASS offered)
    "trains": {},
    "standard-until-may": {"draw": "until_playable", "play_drawn": "may", "double_blank": 25},
}


def _rules(variant: str) -> Rules:
    preset = variant.split("-")[0]
    return Rules.preset(preset).with_options(rounds="single", **VARIANTS[variant])


def _lineup(players: int) -> list[Bot]:
    pool: list[Bot] = [
        SmartBot(),
        MonteCarloBot(budget_ms=3, max_samples=4),
        GreedyBot(),
        RandomBot(),
    ]
    # a fresh instance per seat (several seats may hold the same class)
    return [type(pool[i % 4])() if i >= 4 else pool[i] for i in range(players)]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("players", range(2, 9))
def test_bots_only_choose_offered_moves(variant: str, players: int) -> None:
    rules = _rules(variant)
    asked = {"SmartBot": 0, "MonteCarloBot": 0}
    passes_offered = 0

    def check(turn: Turn, choice: object) -> None:
        nonlocal passes_offered
        assert isinstance(choice, Move), f"{choice!r} is not a Move"
        assert choice in turn.legal_moves, f"{choice.key} not in {turn.legal_moves}"
        assert any(m.kind is MoveKind.PLAY for m in turn.legal_moves)
        passes_offered += any(m.kind is MoveKind.PASS for m in turn.legal_moves)

    for seed in range(2):
        bots = _lineup(players)
        # rotate the lineup with the seed so every bot meets several seats
        bots = bots[seed % players :] + bots[: seed % players]
        played = play_match(
            bots, rules, seed=1000 * players + seed, match_id=f"legal-{variant}-{players}-{seed}",
            on_turn=check,
        )
        assert played.state.is_over
        for seat, bot in enumerate(bots):
            name = type(bot).__name__
            if name in asked:
                asked[name] += len(played.decisions[seat])
    if players >= 2:
        assert asked["SmartBot"] > 0
    if players >= 3 or asked["MonteCarloBot"]:
        assert asked["MonteCarloBot"] > 0
    if variant != "maltese" and "may" not in variant:
        assert passes_offered == 0


def test_keeping_a_drawn_tile_is_possible_under_may() -> None:
    """Under play_drawn=may the bots are offered PASS and still pick only offered moves."""
    rules = Rules.preset("maltese").with_options(rounds=3)
    seen = 0

    def check(turn: Turn, choice: object) -> None:
        nonlocal seen
        if any(m.kind is MoveKind.PASS for m in turn.legal_moves):
            seen += 1
            assert turn.observation.drawn_tile is not None
            assert choice in turn.legal_moves

    for seed in range(3):
        play_match(
            [SmartBot(), MonteCarloBot(budget_ms=3, max_samples=4), SmartBot(), GreedyBot()],
            rules, seed=seed, match_id=f"may-{seed}", on_turn=check,
        )
    assert seen > 0


@pytest.mark.parametrize(
    ("module", "cls"),
    [("cfarena.bots.smart", SmartBot), ("cfarena.bots.montecarlo", MonteCarloBot)],
)
def test_bots_are_runnable_targets(module: str, cls: type[Bot]) -> None:
    # `python -m cfarena.sdk run MODULE` needs exactly one Bot subclass defined there
    assert load_bot_class(module) is cls
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "--token" in done.stdout
