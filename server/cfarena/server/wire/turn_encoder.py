"""The referee's per-match Turn encoder: `encode.turn_message_bytes`, incrementally.

The referee encodes one Turn per bot decision, so this is the hot path of a
match. Between two Turns of a match little changes: a node or two of the
layout, one tile of a hand, a few counters. The encoder keeps the wire bytes
of everything that did not change and re-encodes the rest:

- layout entries by node, re-encoded only for nodes whose PlacedTile object
  changed (the engine replaces a node's PlacedTile when the node changes and
  keeps it otherwise; a changed node is found by identity, in C);
- hand, round-double and drawn-tile entries by the identity of the engine's
  interned Tile objects (any other Tile falls back to a lookup by value);
- legal-move entries by the engine's shared Move objects;
- event entries by event position (a draw is seen one way by the drawer and
  another way by everyone else: both are kept);
- the totals and finished rounds' scores until they change.

The bytes are exactly those of `turn_message_bytes`
(tests/sdk/test_sdk_convert.py compares them over whole matches of every
preset), so a bot cannot tell which of the two encoded its Turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import is_not

from cfarena.engine.events import Event, EventKind
from cfarena.engine.moves import Move
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.server.wire import raw
from cfarena.server.wire.encode import (
    event_payload,
    first_event_index,
    move_payload,
    offered_moves,
)

# Turn.legal_moves entries (field 4) by id(move). The stored Move keeps the id
# from being reused by another object while its entry lives; the engine's
# Moves are shared (one object per move), so this stays small.
_MOVE_ENTRIES: dict[int, tuple[Move, bytes]] = {}
_MOVE_LIMIT = 1 << 16


def _move_entry(move: Move) -> bytes:
    if len(_MOVE_ENTRIES) >= _MOVE_LIMIT:
        _MOVE_ENTRIES.clear()
    entry = raw.move_entry(move_payload(move))
    _MOVE_ENTRIES[id(move)] = (move, entry)
    return entry


class TurnEncoder:
    """Encodes the Turns of one match (see the module docstring)."""

    def __init__(self, match_id: str) -> None:
        self._match_field = raw.match_id_field(match_id)
        self._events: dict[int, tuple[Event, bytes]] = {}
        self._hidden_draws: dict[int, tuple[Event, bytes]] = {}
        # the current round's layout: its PlacedTiles, their entries, and the
        # entries joined (within one round nodes are only added or replaced)
        self._round = -1
        self._nodes: list[PlacedTile] = []
        self._entries: list[bytes] = []
        self._layout_bytes = b""
        self._scores_key = -1
        self._scores = b""
        self._totals_of: tuple[int, ...] | None = None
        self._totals = b""

    def _layout(self, obs: Observation) -> bytes:
        layout = obs.layout
        nodes, entries = self._nodes, self._entries
        if obs.round_index != self._round or len(layout) < len(nodes):
            self._round = obs.round_index
            nodes.clear()
            entries.clear()
            self._layout_bytes = b""
        changed = False
        for i in compress(range(len(nodes)), map(is_not, layout, nodes)):
            nodes[i] = layout[i]
            entries[i] = raw.placed_entry(layout[i])
            changed = True
        if len(layout) > len(nodes):
            for placed in layout[len(nodes):]:
                nodes.append(placed)
                entries.append(raw.placed_entry(placed))
            changed = True
        if changed:
            self._layout_bytes = b"".join(entries)
        return self._layout_bytes

    def _observation(self, obs: Observation) -> bytes:
        if len(obs.round_scores) != self._scores_key:
            self._scores_key = len(obs.round_scores)
            self._scores = raw.scores_bytes(obs)
        if obs.totals is not self._totals_of:
            self._totals_of = obs.totals
            self._totals = raw.packed_field(12, obs.totals)
        return raw.observation_bytes(obs, self._layout(obs), self._scores, self._totals)

    @staticmethod
    def _event_entry(event: Event, index: int) -> bytes:
        return raw.event_entry(event_payload(event, index))

    def encode(
        self,
        turn_id: int,
        obs: Observation,
        events: Sequence[Event],
        *,
        deadline_ms: int,
        bank_ms: int = 0,
        legal_moves: Sequence[Move] | None = None,
    ) -> bytes:
        """The serialized `RefereeMessage(turn=...)`, as `turn_message_bytes` makes it
        (the same arguments but `match_id`, which is the encoder's)."""
        first = first_event_index(obs, events)
        cached_move = _MOVE_ENTRIES.get
        entries = [
            hit[1] if (hit := cached_move(id(move))) is not None else _move_entry(move)
            for move in offered_moves(obs, legal_moves)
        ]
        if events:
            event_cache, hidden = self._events, self._hidden_draws
            for i, event in enumerate(events, first):
                cached = event_cache.get(i)
                if cached is None or cached[0] is not event:
                    if event.kind is EventKind.DRAW and event.tile is None:
                        # another seat's draw, as every seat but the drawer sees it
                        cached = hidden.get(i)
                        if cached is None or cached[0] != event:
                            cached = hidden[i] = (event, self._event_entry(event, i))
                    else:
                        cached = (event, self._event_entry(event, i))
                        if event.kind is not EventKind.DRAW:  # the drawer's own view is apart
                            event_cache[i] = cached
                entries.append(cached[1])
        return raw.turn_message(self._match_field, turn_id, self._observation(obs), entries,
                                deadline_ms, bank_ms)
