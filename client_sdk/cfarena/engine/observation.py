"""What one seat knows (RULES.md §6): built only by `observe(state, seat)`."""

from __future__ import annotations

from dataclasses import dataclass

from cfarena.engine.moves import Move
from cfarena.engine.outcome import RoundOutcome
from cfarena.engine.rules import ResolvedRules
from cfarena.engine.tiles import Tile


@dataclass(frozen=True, slots=True)
class PlacedTile:
    """A tile on the layout. Node 0 is the centre (round double, parent None).

    `open_value` is the value its free end exposes; `capacity` how many children
    it accepts in all (spokes for the centre, toes for a double, 1 otherwise);
    `children` how many it has.
    """

    node: int
    tile: Tile
    parent: int | None
    open_value: int
    capacity: int
    children: int

    @property
    def free(self) -> int:
        return self.capacity - self.children

    @property
    def is_double(self) -> bool:
        return self.tile.is_double


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything seat `seat` may know at this moment, and nothing else."""

    seat: int
    rules: ResolvedRules
    round_index: int
    round_double: Tile
    layout: tuple[PlacedTile, ...]  # indexed by node id
    pending: int | None  # node id of the pending double, if any
    hand: tuple[Tile, ...]  # this seat's hand, sorted
    hand_sizes: tuple[int, ...]  # every seat's hand size
    boneyard_size: int
    drawable: int  # how many boneyard tiles may still be drawn (size - reserve, >= 0)
    current_seat: int | None  # whose turn it is (None once the match is over)
    drawn_tile: Tile | None  # the tile this seat drew this turn, if it is deciding on it
    round_scores: tuple[tuple[int, ...], ...]  # scores of finished rounds, per seat
    totals: tuple[int, ...]  # match totals so far
    event_count: int  # how many events the match has had (for incremental syncing)
    legal_moves: tuple[Move, ...]  # this seat's legal moves if it is to move, else ()
    # how earlier rounds ended (public ROUND_END events), one per finished round
    round_outcomes: tuple[RoundOutcome, ...] = ()
    # whether the seat to move has already drawn this turn (the DRAW event is public)
    current_has_drawn: bool = False

    @property
    def players(self) -> int:
        return self.rules.players

    def open_ends(self) -> tuple[PlacedTile, ...]:
        """Placed tiles that still accept a child."""
        return tuple(p for p in self.layout if p.children < p.capacity)


@dataclass(frozen=True, slots=True)
class PublicView:
    """What anyone watching the table may know (no seat's hand, no boneyard order, no
    seed): built only by `public_view(state)`, for spectators of a running match.

    No "whose turn" and no "has drawn": a spectator sees the state only at moments
    it does not choose, where a seat is deciding (at a fitting drawn tile under
    play_drawn="may", say); marking that seat would tell what the events hide
    (RULES.md §6). Turn order follows from the events."""

    rules: ResolvedRules
    round_index: int
    round_double: Tile
    layout: tuple[PlacedTile, ...]  # indexed by node id
    pending: int | None  # node id of the pending double, if any
    hand_sizes: tuple[int, ...]  # every seat's hand size
    boneyard_size: int
    round_scores: tuple[tuple[int, ...], ...]  # scores of finished rounds, per seat
    totals: tuple[int, ...]  # match totals so far
    event_count: int  # how many events the match has had
    over: bool  # the match has ended

    @property
    def players(self) -> int:
        return self.rules.players
