"""The Chicken Foot rules engine: pure Python, no I/O (RULES.md).

    from cfarena.engine import Rules, new_match, legal_moves, apply_move, observe

    state = new_match(Rules.preset("standard"), players=4, seed=42)
    while not state.is_over:
        moves = legal_moves(state)
        apply_move(state, moves[0])
    print(state.outcome)
"""

from __future__ import annotations

from cfarena.engine.dealing import RoundDeal
from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile, PublicView
from cfarena.engine.outcome import MatchEnd, Outcome, RoundOutcome, rank_seats
from cfarena.engine.play import apply_move, fallback_move, legal_moves, needs_decision, new_match
from cfarena.engine.render import render
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
from cfarena.engine.state import IllegalMoveError, MatchState
from cfarena.engine.tiles import Tile, full_set
from cfarena.engine.views import (
    determinize,
    observe,
    public_events,
    public_view,
    visible_events,
)

__all__ = [
    "DRAW",
    "PASS",
    "PRESETS",
    "Draw",
    "Event",
    "EventKind",
    "IllegalMoveError",
    "MatchEnd",
    "MatchState",
    "Move",
    "MoveKind",
    "Observation",
    "Outcome",
    "PlacedTile",
    "PlayDrawn",
    "PublicView",
    "ResolvedRules",
    "RoundDeal",
    "RoundEnd",
    "RoundOutcome",
    "Rules",
    "RulesError",
    "Start",
    "TieBreak",
    "Tile",
    "apply_move",
    "determinize",
    "fallback_move",
    "full_set",
    "legal_moves",
    "needs_decision",
    "new_match",
    "observe",
    "public_events",
    "public_view",
    "rank_seats",
    "render",
    "visible_events",
]
