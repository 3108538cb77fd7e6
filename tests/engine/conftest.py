"""Shared helpers for the engine tests, handed to tests as fixtures.

(There is no tests/__init__.py, so helpers are not imported by module name:
each is a fixture returning a plain function.)
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from cfarena.engine import (
    MatchState,
    Move,
    MoveKind,
    ResolvedRules,
    Rules,
    Tile,
    apply_move,
    full_set,
    legal_moves,
)


def tiles(text: str) -> list[Tile]:
    """`"9-4 4-4"` -> [Tile(4, 9), Tile(4, 4)]."""
    return [Tile.parse(t) for t in text.split()]


def play(tile: str, parent: int) -> Move:
    return Move.play(Tile.parse(tile), parent)


def keys(moves: Sequence[Move]) -> list[str]:
    return [m.key for m in moves]


def small_rules(**options: Any) -> Rules:
    """A double-4 set (15 tiles, centre 4-4 in round 0) on top of `standard`."""
    base: dict[str, Any] = {
        "set_size": 4,
        "hand_size": 1,
        "spokes": 2,
        "rounds": "single",
    }
    base.update(options)
    return Rules.preset("standard").with_options(**base)


def make_deal(
    rules: Rules | ResolvedRules,
    hands: Sequence[str],
    boneyard: str = "",
    rest: int | None = None,
    first: int = 0,
    round_index: int = 0,
    seed: int = 0,
) -> MatchState:
    """`MatchState.from_deal` where the tiles not named go to the end of the
    boneyard (rest=None) or to seat `rest`'s hand, in canonical order."""
    players = len(hands)
    resolved = rules if isinstance(rules, ResolvedRules) else rules.resolve(players)
    value = resolved.round_double_value(round_index)
    hand_tiles = [tiles(h) for h in hands]
    bone = tiles(boneyard)
    named = {t for h in hand_tiles for t in h} | set(bone) | {Tile(value, value)}
    others = [t for t in full_set(resolved.set_size) if t not in named]
    if rest is None:
        bone += others
    else:
        hand_tiles[rest] += others
    return MatchState.from_deal(
        resolved, players, hand_tiles, bone, first, round_index=round_index, seed=seed
    )


def conserved(state: MatchState) -> bool:
    """Hands + boneyard + layout hold each tile of the set exactly once."""
    return Counter(state.tiles_in_play()) == Counter(full_set(state.rules.set_size))


def random_playout(
    state: MatchState,
    rng: random.Random,
    check: Callable[[MatchState, Move], None] | None = None,
    max_moves: int = 100_000,
) -> int:
    """Play random legal moves to the end of the match; the number of moves."""
    moves_made = 0
    while not state.is_over:
        moves = legal_moves(state)
        assert moves, "a live match must offer a move"
        move = moves[rng.randrange(len(moves))]
        if check is not None:
            check(state, move)
        apply_move(state, move)
        moves_made += 1
        assert moves_made < max_moves, "match does not terminate"
    return moves_made


def plays_only(moves: Sequence[Move]) -> bool:
    return all(m.kind is MoveKind.PLAY for m in moves)


class Helpers:
    """The helpers above, as one fixture (`h.deal(...)`, `h.keys(...)`, ...)."""

    tiles = staticmethod(tiles)
    play = staticmethod(play)
    keys = staticmethod(keys)
    small_rules = staticmethod(small_rules)
    deal = staticmethod(make_deal)
    conserved = staticmethod(conserved)
    random_playout = staticmethod(random_playout)
    plays_only = staticmethod(plays_only)


@pytest.fixture(scope="session")
def h() -> type[Helpers]:
    return Helpers
