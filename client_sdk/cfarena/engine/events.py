"""Events: what happened at the table, in order.

The engine records every event with full information. `Event.seen_by(seat)`
gives the version a seat may see: the tile of a draw is blanked for everyone
but the drawer (RULES.md §6).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cfarena.engine.tiles import Tile


class EventKind(enum.Enum):
    """Kinds of table events."""

    ROUND_START = "round_start"  # a round begins: `tile` is its round double, seat = first mover
    DRAW_OFF = "draw_off"  # `draw_off` start: seat drew `tile` (public; all go back but the double)
    CENTRE = "centre"  # seat put the round double in the centre (node 0)
    PLAY = "play"  # seat played `tile` on node `parent`, creating node `node`
    DRAW = "draw"  # seat drew a tile from the boneyard (`tile` only for the drawer)
    PASS = "pass"  # seat passed
    ROUND_END = "round_end"  # the round ended: `scores` per seat, `reason`, seat = who went out


class RoundEnd(enum.Enum):
    """Why a round ended."""

    WENT_OUT = "went_out"
    BLOCKED = "blocked"


@dataclass(frozen=True, slots=True)
class Event:
    """One table event. Unused fields are None."""

    kind: EventKind
    round_index: int
    seat: int | None = None
    tile: Tile | None = None
    node: int | None = None
    parent: int | None = None
    scores: tuple[int, ...] | None = None
    reason: RoundEnd | None = None

    def seen_by(self, seat: int) -> Event:
        """This event as `seat` may see it (other seats' drawn tiles are hidden)."""
        if self.kind is EventKind.DRAW and self.seat != seat and self.tile is not None:
            # the fields spelled out: dataclasses.replace costs several times more
            return Event(self.kind, self.round_index, self.seat, None, self.node, self.parent,
                         self.scores, self.reason)
        return self

    def describe(self, viewer: int | None = None) -> str:
        """One line of text; the `viewer`'s own seat is marked "(you)"."""

        def who(seat: int | None) -> str:
            if seat is None:
                return "the referee"
            return f"seat {seat} (you)" if seat == viewer else f"seat {seat}"

        k = self.kind
        if k is EventKind.ROUND_START:
            return f"round {self.round_index + 1} starts with {self.tile}; {who(self.seat)} first"
        if k is EventKind.DRAW_OFF:
            return f"{who(self.seat)} draws {self.tile} in the draw-off"
        if k is EventKind.CENTRE:
            return f"{who(self.seat)} puts {self.tile} in the centre"
        if k is EventKind.PLAY:
            return f"{who(self.seat)} plays {self.tile} on #{self.parent} (new #{self.node})"
        if k is EventKind.DRAW:
            tile = self.tile if self.tile is not None else "a tile"
            return f"{who(self.seat)} draws {tile}"
        if k is EventKind.PASS:
            return f"{who(self.seat)} passes"
        reason = self.reason.value.replace("_", " ") if self.reason else "?"
        out = f", {who(self.seat)} went out" if self.seat is not None else ""
        return f"round {self.round_index + 1} ends ({reason}{out})"

    def __str__(self) -> str:
        return self.describe()
