"""Playing a match: the public move functions over `MatchState` (RULES.md §3-§5)."""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.engine.events import Event
from cfarena.engine.moves import Move, MoveKind
from cfarena.engine.rules import ResolvedRules, Rules, resolve_rules
from cfarena.engine.state import MatchState


def new_match(rules: Rules | ResolvedRules, players: int, seed: int) -> MatchState:
    """A new match, its first round dealt from `seed` and set up.

    Raises RulesError (naming the option) before anything starts if `rules`
    cannot be played with `players` players.
    """
    return MatchState.new(resolve_rules(rules, players), seed)


def legal_moves(state: MatchState) -> tuple[Move, ...]:
    """The legal moves of `state.current_seat` in canonical order; () when nobody moves.

    Canonical order: plays sorted by tile (0-0, 0-1, ...) then parent node,
    then DRAW or PASS (PASS only after a fitting drawn tile under
    play_drawn="may"; otherwise a DRAW or PASS is the only legal move).
    """
    return state.legal()


def apply_move(state: MatchState, move: Move) -> list[Event]:
    """Apply `move` for the current seat; the events it produced (IllegalMoveError if illegal).

    A move that ends the round also produces ROUND_END and, unless the match
    is over (or the state halts between rounds), the next round's setup
    events, so afterwards `current_seat` is a seat that must move or None.
    """
    return state.apply(move)


def needs_decision(moves: Sequence[Move]) -> bool:
    """True iff `moves` offers a PLAY; DRAW-only or PASS-only turns are forced."""
    return any(move.kind is MoveKind.PLAY for move in moves)


def fallback_move(moves: Sequence[Move]) -> Move:
    """The deterministic move for a forfeited seat.

    The heaviest PLAY (most pips); among equally heavy plays the lowest tile
    in tile order, then the lowest parent node. Without a PLAY, the single
    DRAW or PASS. ValueError if `moves` is empty.
    """
    best: Move | None = None
    best_key: tuple[int, int, int, int] | None = None
    for move in moves:
        tile = move.tile
        if move.kind is not MoveKind.PLAY or tile is None or move.parent is None:
            continue
        key = (-tile.pips, tile.a, tile.b, move.parent)
        if best_key is None or key < best_key:
            best, best_key = move, key
    if best is not None:
        return best
    if not moves:
        raise ValueError("fallback_move: no legal moves (the match is over)")
    return moves[0]
