"""Hand-rolled protobuf encoding of the referee's hot path (Observation, Turn).

Building an Observation message field by field through the Python protobuf
API costs ~50 µs for a 30-node layout; writing the wire bytes directly (with
per-tile and small-integer byte tables) is several times faster, and
`turn_encoder.TurnEncoder` keeps what did not change between two Turns.
tests/sdk/test_sdk_convert.py checks the result against the plain
constructor-based encoding. Field numbers are those of
proto/cfarena/v1/arena.proto; change both together.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.tile_codes import TILE_OF
from cfarena.engine.tiles import MAX_SET, Tile

_SMALL = [bytes([n]) for n in range(128)]


def varint(n: int) -> bytes:
    """The base-128 varint of a non-negative int."""
    if n < 128:
        if n < 0:
            raise ValueError(f"cannot encode negative {n}")
        return _SMALL[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


# field keys of the field numbers our messages use (1..15: one byte each)
_LEN_KEY = [_key(f, 2) for f in range(16)]
_INT_KEY = [_key(f, 0) for f in range(16)]


def length_delimited(field: int, payload: bytes) -> bytes:
    n = len(payload)
    return _LEN_KEY[field] + (_SMALL[n] if n < 128 else varint(n)) + payload


# _FIELD_SMALL[field][n]: the scalar field `field` holding n < 128 (b"" for 0)
_FIELD_SMALL = [[b""] + [_INT_KEY[f] + _SMALL[n] for n in range(1, 128)] for f in range(16)]


def _uint(field: int, n: int) -> bytes:
    """A proto3 scalar: omitted when 0."""
    if 0 <= n < 128:
        return _FIELD_SMALL[field][n]
    return _INT_KEY[field] + varint(n)


def _packed(field: int, values: Sequence[int]) -> bytes:
    """A packed repeated uint32 field (omitted when empty)."""
    if not values:
        return b""
    if max(values) < 128:  # one byte each (a negative value fails in bytes() as in varint)
        return length_delimited(field, bytes(values))
    return length_delimited(field, b"".join([varint(v) for v in values]))


packed_field = _packed


def _tile_payload(a: int, b: int) -> bytes:
    return _uint(1, a) + _uint(2, b)


# Tile -> its serialized Tile message (payload, no key)
TILE_BYTES: dict[Tile, bytes] = {
    Tile(a, b): _tile_payload(a, b) for a in range(MAX_SET + 1) for b in range(a, MAX_SET + 1)
}
class TileEntries:
    """One tile field's serialized entries (key + length + Tile), looked up fast.

    The engine interns its Tile objects (they live as long as the module, so
    their ids are stable): lookups go by id, in C; any other Tile goes by value.
    """

    __slots__ = ("by_id", "by_value")

    def __init__(self, field: int) -> None:
        self.by_value = {t: length_delimited(field, p) for t, p in TILE_BYTES.items()}
        self.by_id = {id(t): self.by_value[t] for t in set(TILE_OF)}

    def __getitem__(self, tile: Tile) -> bytes:
        entry = self.by_id.get(id(tile))
        return entry if entry is not None else self.by_value[tile]

    def join(self, tiles: Sequence[Tile]) -> bytes:
        """The entries of `tiles`, concatenated (a repeated field)."""
        try:
            return b"".join(map(self.by_id.__getitem__, map(id, tiles)))
        except KeyError:  # a Tile the engine did not intern
            return b"".join([self[t] for t in tiles])


# Observation.round_double (3), .hand (6), .drawn_tile (10); PlacedTile.tile (2); Event.tile (5)
ROUND_DOUBLE = TileEntries(3)
HAND = TileEntries(6)
DRAWN = TileEntries(10)
_PLACED_TILE = TileEntries(2)
_EVENT_TILE = TileEntries(5)
# PlacedTile.parent (3), Event.seat (4), .node (6), .parent (7) have explicit
# presence: written whenever set, 0 included
_PARENT = [b"\x18" + _SMALL[n] for n in range(128)]
_SEAT = [b"\x20" + _SMALL[n] for n in range(128)]
_NODE_SET = [b"\x30" + _SMALL[n] for n in range(128)]
_PARENT_SET = [b"\x38" + _SMALL[n] for n in range(128)]


def placed_entry(p: PlacedTile) -> bytes:
    """Observation.layout entry (field 4) of a placed tile."""
    parent = p.parent
    payload = (
        _uint(1, p.node)
        + _PLACED_TILE[p.tile]
        + (b"" if parent is None else _PARENT[parent] if 0 <= parent < 128
           else b"\x18" + varint(parent))
        + _uint(4, p.open_value)
        + _uint(5, p.capacity)
        + _uint(6, p.children)
    )
    return length_delimited(4, payload)


def layout_bytes(layout: Sequence[PlacedTile]) -> bytes:
    """The Observation.layout entries (field 4) of a layout, concatenated."""
    return b"".join([placed_entry(p) for p in layout])


def scores_bytes(obs: Observation) -> bytes:
    """Observation.round_scores (field 11) entries, concatenated."""
    return b"".join([length_delimited(11, _packed(1, r)) for r in obs.round_scores])


def observation_bytes(
    obs: Observation,
    layout: bytes | None = None,
    scores: bytes | None = None,
    totals: bytes | None = None,
) -> bytes:
    """The serialized Observation message.

    `layout`, `scores` and `totals` are `layout_bytes(obs.layout)`,
    `scores_bytes(obs)` and `_packed(12, obs.totals)` when the caller has them
    cached (turn_encoder.TurnEncoder does).
    """
    parts = [
        _uint(1, obs.seat),
        _uint(2, obs.round_index),
        ROUND_DOUBLE[obs.round_double],
        layout_bytes(obs.layout) if layout is None else layout,
        b"" if obs.pending is None else b"\x28" + varint(obs.pending),
        HAND.join(obs.hand),
        _packed(7, obs.hand_sizes),
        _uint(8, obs.boneyard_size),
        _uint(9, obs.drawable),
        b"" if obs.drawn_tile is None else DRAWN[obs.drawn_tile],
        scores_bytes(obs) if scores is None else scores,
        _packed(12, obs.totals) if totals is None else totals,
        _uint(13, obs.event_count),
    ]
    return b"".join(parts)


def event_bytes(
    index: int,
    kind: int,
    round_index: int,
    seat: int | None,
    tile: Tile | None,
    node: int | None,
    parent: int | None,
    scores: Sequence[int] | None,
    round_end: str,
) -> bytes:
    """The serialized Event message (`kind` is the EventKind number)."""
    head = _uint(1, index) + _uint(2, kind) + _uint(3, round_index)
    if seat is not None:
        head += _SEAT[seat] if 0 <= seat < 128 else b"\x20" + varint(seat)
    if tile is not None:
        head += _EVENT_TILE[tile]
    if node is not None:
        head += _NODE_SET[node] if 0 <= node < 128 else b"\x30" + varint(node)
    if parent is not None:
        head += _PARENT_SET[parent] if 0 <= parent < 128 else b"\x38" + varint(parent)
    if scores:
        head += _packed(8, scores)
    if round_end:
        head += length_delimited(9, round_end.encode())
    return head


def match_id_field(match_id: str) -> bytes:
    """Turn.match_id (field 1), keyed; empty for an empty id."""
    mid = match_id.encode()
    return length_delimited(1, mid) if mid else b""


def move_entry(move: bytes) -> bytes:
    """A Turn.legal_moves entry (field 4) of a serialized Move."""
    return length_delimited(4, move)


def event_entry(event: bytes) -> bytes:
    """A Turn.events entry (field 5) of a serialized Event."""
    return length_delimited(5, event)


def turn_message(
    match_field: bytes,
    turn_id: int,
    observation: bytes,
    entries: Sequence[bytes],
    deadline_ms: int,
    bank_ms: int,
) -> bytes:
    """The serialized `RefereeMessage(turn=Turn(...))` from already encoded parts.

    `match_field` is `match_id_field(...)`; `observation` a serialized
    Observation; `entries` the Turn's `move_entry`s, then its `event_entry`s.
    """
    turn = b"".join((
        match_field,
        _uint(2, turn_id),
        length_delimited(3, observation),
        *entries,
        _uint(6, deadline_ms),
        _uint(7, bank_ms),
    ))
    return length_delimited(3, turn)
