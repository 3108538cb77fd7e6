"""The Chicken Foot rules engine: pure Python, no I/O (RULES.md).

    from cfarena.engine import Rules, new_match, legal_moves, apply_move, observe

    state = new_match(Rules.preset("standard"), players=4, seed=42)
    while not state.is_over:
        moves = legal_moves(state)
        apply_move(state, moves[0])
    print(state.outcome)
"""

from __future__ import annotations

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.outcome import MatchEnd, Outcome, RoundOutcome, rank_seats
from cfarena.engine.rules import (
    PRESETS,
    Draw,
    PlayDrawn,
    ResolvedRules,
    Rules,
    RulesError,
    Start,
    TieBreak,
)
from cfarena.engine.tiles import Tile, full_set

__all__ = [
    "DRAW",
    "PASS",
    "PRESETS",
    "Draw",
    "Event",
    "EventKind",
    "MatchEnd",
    "Move",
    "MoveKind",
    "Observation",
    "Outcome",
    "PlacedTile",
    "PlayDrawn",
    "ResolvedRules",
    "RoundEnd",
    "RoundOutcome",
    "Rules",
    "RulesError",
    "Start",
    "TieBreak",
    "Tile",
    "full_set",
    "rank_seats",
]
