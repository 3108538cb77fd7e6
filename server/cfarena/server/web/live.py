"""The live view's messages: functions of a running match's public events only.

A spectator's table (`PublicTable`) is folded from the public events
(`cfarena.engine.public_events`: every drawn tile blanked), starting from the
engine's `public_view` of the match as it started: the layout, hand sizes,
boneyard count, scores and the seat whose turn the events say it is. Nothing is
read from the live state but its events, so no message can carry a hand, the
boneyard order, the seed, or who is deciding right now.

Where a message ends matters as much as what it holds. The hub reads a match
only on the referee's event loop, where the referee waits for a decision: a seat
to move that holds a tile it can play (its next event is a PLAY, so nothing is
given away), or a seat whose drawn tile fits (its next event may be a PLAY or,
under play_drawn="may", a PASS that keeps the tile: hidden). A forced draw and a
forced pass are applied at once, never seen half-way. A message that ended just
after a draw, or between a move and the draw that follows it, would tell that the
drawn tile fits, and so would one that ended just before the PLAY of a drawn tile
when it is a later draw the hub found being decided on. So `public_cut` ends every
message just before a PLAY that began a turn (or where the match started, or where
it ended): places where the referee waits in any deal with the same public events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cfarena.engine import Event, EventKind, PlacedTile, PublicView
from cfarena.engine.rules import ResolvedRules, Start

RECENT_EVENTS = 60  # a viewer that joins gets this many of the latest events

# the keys of a live message (`live_message`), for tests and docs/WEB.md
TABLE_KEYS = frozenset({"round", "round_double", "layout", "pending", "hand_sizes",
                        "boneyard", "to_move", "round_scores", "totals", "event_count",
                        "over", "events"})
EVENT_KEYS = frozenset({"i", "kind", "round", "seat", "tile", "node", "parent", "scores",
                        "reason", "text"})
PLACED_KEYS = frozenset({"node", "tile", "parent", "open", "free"})


def public_cut(events: Sequence[Event], sent: int) -> int:
    """Where the next message ends: all of `events` unless they end in a draw (the
    drawer is deciding on a tile that fits), then just before the latest PLAY that
    began a turn (not one of a drawn tile: the referee waited there only if the tile
    fitted); never before `sent`, what was sent already. See the module doc."""
    if not events or events[-1].kind is not EventKind.DRAW:
        return len(events)
    for index in range(len(events) - 1, sent, -1):
        if events[index].kind is EventKind.PLAY \
                and events[index - 1].kind is not EventKind.DRAW:
            return index
    return sent


@dataclass
class PublicTable:
    """The table as public events show it, after `count` events (`fold` on)."""

    rules: ResolvedRules
    round_index: int
    round_double: str
    layout: list[PlacedTile]
    pending: int | None
    hand_sizes: list[int]
    boneyard: int
    to_move: int | None  # whose turn the events say it is (None between rounds, at the end)
    round_scores: list[tuple[int, ...]]
    totals: list[int]
    count: int  # events folded (an index into the match's events)
    event_offset: int  # events before the state's own (a match resumed from a position)

    @classmethod
    def start(cls, view: PublicView, events: Sequence[Event], event_offset: int
              ) -> PublicTable:
        """The table of a match as it starts: `view` is `public_view` of its state then,
        `events` its events so far (public or not: only whose turn is read)."""
        to_move = None
        for event in reversed(events):
            if event.kind in (EventKind.PLAY, EventKind.PASS, EventKind.ROUND_START,
                              EventKind.ROUND_END):
                to_move = _turn_after(event, view.rules.players)
                break
        return cls(view.rules, view.round_index, str(view.round_double), list(view.layout),
                   view.pending, list(view.hand_sizes), view.boneyard_size, to_move,
                   list(view.round_scores), list(view.totals), len(events), event_offset)

    def fold(self, events: Sequence[Event]) -> None:
        """Apply public events (`events[i]` is event number `count + i`)."""
        rules = self.rules
        for event in events:
            kind, seat = event.kind, event.seat
            if kind is EventKind.ROUND_START:
                assert event.tile is not None
                dealt = rules.players * rules.hand_size
                tiles = (rules.set_size + 1) * (rules.set_size + 2) // 2
                self.round_index = event.round_index
                self.round_double = str(event.tile)
                self.layout, self.pending = [], None
                self.hand_sizes = [rules.hand_size] * rules.players
                # under "holder" the round double was dealt; else it is set aside
                self.boneyard = tiles - dealt - (rules.start is not Start.HOLDER)
            elif kind is EventKind.DRAW:
                assert seat is not None
                self.hand_sizes[seat] += 1
                self.boneyard -= 1
            elif kind is EventKind.CENTRE:
                assert event.tile is not None
                if seat is not None and rules.start is Start.HOLDER:
                    self.hand_sizes[seat] -= 1  # the holder puts it from its hand
                self.layout = [PlacedTile(0, event.tile, None, event.tile.a, rules.spokes, 0)]
                self.pending = 0
            elif kind is EventKind.PLAY:
                self._play(event)
            elif kind is EventKind.ROUND_END:
                assert event.scores is not None
                self.round_scores.append(event.scores)
                self.totals = [t + s for t, s in zip(self.totals, event.scores, strict=True)]
            self.to_move = _turn_after(event, rules.players, self.to_move)
        self.count += len(events)

    def _play(self, event: Event) -> None:
        seat, tile, node, parent = event.seat, event.tile, event.node, event.parent
        assert seat is not None and tile is not None and node is not None
        assert parent is not None and node == len(self.layout)
        self.hand_sizes[seat] -= 1
        host = self.layout[parent]
        self.layout[parent] = replace(host, children=host.children + 1)
        if host.children + 1 >= host.capacity and self.pending == parent:
            self.pending = None
        if tile.is_double:
            self.layout.append(PlacedTile(node, tile, parent, tile.a, self.rules.toes, 0))
            self.pending = node
        else:
            other = tile.b if tile.a == host.open_value else tile.a
            self.layout.append(PlacedTile(node, tile, parent, other, 1, 0))

    def json(self, over: bool) -> dict[str, Any]:
        """The table as a message shows it (`over`: the match has ended here)."""
        return {
            "round": self.round_index,
            "round_double": self.round_double,
            "layout": [{"node": p.node, "tile": str(p.tile), "parent": p.parent,
                        "open": p.open_value, "free": p.free} for p in self.layout],
            "pending": self.pending,
            "hand_sizes": list(self.hand_sizes),
            "boneyard": self.boneyard,
            "to_move": None if over else self.to_move,
            "round_scores": [list(r) for r in self.round_scores],
            "totals": list(self.totals),
            "event_count": self.event_offset + self.count,
            "over": over,
        }


def _turn_after(event: Event, players: int, before: int | None = None) -> int | None:
    """Whose turn it is after `event` by the rules' turn order (`before` if it does
    not change it)."""
    kind = event.kind
    if kind is EventKind.ROUND_START:
        return event.seat
    if kind in (EventKind.PLAY, EventKind.PASS):
        assert event.seat is not None
        return (event.seat + 1) % players
    if kind is EventKind.ROUND_END:
        return None
    return before


def event_json(event: Event, index: int) -> dict[str, Any]:
    """One public event (a draw has no tile)."""
    return {
        "i": index,
        "kind": event.kind.value,
        "round": event.round_index,
        "seat": event.seat,
        "tile": None if event.tile is None else str(event.tile),
        "node": event.node,
        "parent": event.parent,
        "scores": None if event.scores is None else list(event.scores),
        "reason": None if event.reason is None else event.reason.value,
        "text": event.describe(),
    }


def live_message(table: PublicTable, events: Sequence[Event], first_index: int,
                 over: bool = False) -> dict[str, Any]:
    """The table with the public events numbered from `first_index` (they end where
    the table is)."""
    out = table.json(over)
    out["events"] = [event_json(e, first_index + i) for i, e in enumerate(events)]
    return out
