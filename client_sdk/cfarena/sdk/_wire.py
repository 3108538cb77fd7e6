"""Hand-rolled protobuf encoding of the referee's hot path (Observation, Turn).

Building an Observation message field by field through the Python protobuf
API costs ~50 µs for a 30-node layout; writing the wire bytes directly (with
per-tile, per-move and per-placed-tile byte caches) and parsing them once in C
is several times faster. tests/sdk/test_sdk_convert.py checks the result
against the plain constructor-based encoding. Field numbers are those of
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


uint_field = _uint


def _packed(field: int, values: Sequence[int]) -> bytes:
    if not values:
        return b""
    return length_delimited(field, b"".join([varint(v) for v in values]))


def _tile_payload(a: int, b: int) -> bytes:
    return _uint(1, a) + _uint(2, b)


# Tile -> its serialized Tile message (payload, no key)
TILE_BYTES: dict[Tile, bytes] = {
    Tile(a, b): _tile_payload(a, b) for a in range(MAX_SET + 1) for b in range(a, MAX_SET + 1)
}
# Tile -> Observation.hand entry (field 6), Observation.round_double (3), drawn_tile (10)
HAND_ENTRY = {t: length_delimited(6, p) for t, p in TILE_BYTES.items()}
ROUND_DOUBLE_ENTRY = {t: length_delimited(3, p) for t, p in TILE_BYTES.items()}
_EVENT_TILE = {t: length_delimited(5, p) for t, p in TILE_BYTES.items()}
DRAWN_ENTRY = {t: length_delimited(10, p) for t, p in TILE_BYTES.items()}


_PLACED_LIMIT = 1 << 17
# id(placed tile) -> (the placed tile, its entry). Keyed by identity: the engine
# keeps its PlacedTile objects between observations, and a dataclass __hash__
# (a Python call per tile) would cost more than the encoding it saves. The
# stored reference keeps the id from being reused while the entry lives.
_placed: dict[int, tuple[PlacedTile, bytes]] = {}
# id(tile) -> hand entry, for the engine's interned tile objects (they live as
# long as the module, so their ids are stable); other Tile objects go by value
_HAND_BY_ID: dict[int, bytes] = {id(t): HAND_ENTRY[t] for t in set(TILE_OF)}


def _hand_entry(t: Tile) -> bytes:
    entry = _HAND_BY_ID.get(id(t))
    return entry if entry is not None else HAND_ENTRY[t]


def layout_entry(p: PlacedTile) -> bytes:
    cached = _placed.get(id(p))
    if cached is not None and cached[0] is p:
        return cached[1]
    return _cached_placed_entry(p)


# Tile -> PlacedTile.tile (field 2) entry, and the same by id of the engine's interned tiles
_PLACED_TILE = {t: length_delimited(2, p) for t, p in TILE_BYTES.items()}
_PLACED_TILE_BY_ID: dict[int, bytes] = {id(t): _PLACED_TILE[t] for t in set(TILE_OF)}
_NODE, _OPEN, _CAP, _KIDS = _FIELD_SMALL[1], _FIELD_SMALL[4], _FIELD_SMALL[5], _FIELD_SMALL[6]
# PlacedTile.parent (field 3) has explicit presence: written whenever it is set, 0 included
_PARENT = [b"\x18" + _SMALL[n] for n in range(128)]


def placed_entry(p: PlacedTile) -> bytes:
    """Observation.layout entry (field 4) of a placed tile (not cached)."""
    node, parent, open_value, capacity, children = (
        p.node, p.parent, p.open_value, p.capacity, p.children
    )
    tile = _PLACED_TILE_BY_ID.get(id(p.tile)) or _PLACED_TILE[p.tile]
    if node < 128 and open_value < 128 and capacity < 128 and children < 128 and (
        parent is None or 0 <= parent < 128
    ):
        payload = (
            _NODE[node]
            + tile
            + (b"" if parent is None else _PARENT[parent])
            + _OPEN[open_value]
            + _CAP[capacity]
            + _KIDS[children]
        )
    else:
        payload = b"".join(
            (
                _uint(1, node),
                tile,
                b"" if parent is None else b"\x18" + varint(parent),
                _uint(4, open_value),
                _uint(5, capacity),
                _uint(6, children),
            )
        )
    n = len(payload)
    return b"\x22" + (_SMALL[n] if n < 128 else varint(n)) + payload


def _cached_placed_entry(p: PlacedTile) -> bytes:
    entry = placed_entry(p)
    if len(_placed) >= _PLACED_LIMIT:
        _placed.clear()
    _placed[id(p)] = (p, entry)
    return entry


def layout_bytes(layout: Sequence[PlacedTile]) -> bytes:
    """The Observation.layout entries (field 4) of a layout, concatenated."""
    return b"".join([layout_entry(p) for p in layout])


def scores_bytes(obs: Observation) -> bytes:
    """Observation.round_scores (field 11) entries, concatenated."""
    return b"".join([length_delimited(11, _packed(1, r)) for r in obs.round_scores])


def observation_bytes(
    obs: Observation, layout: bytes | None = None, scores: bytes | None = None
) -> bytes:
    """The serialized Observation message.

    `layout` and `scores` are `layout_bytes(obs.layout)` and
    `scores_bytes(obs)` when the caller has them cached.
    """
    parts = [
        _uint(1, obs.seat),
        _uint(2, obs.round_index),
        ROUND_DOUBLE_ENTRY[obs.round_double],
        layout_bytes(obs.layout) if layout is None else layout,
        b"" if obs.pending is None else b"\x28" + varint(obs.pending),
        *[_hand_entry(t) for t in obs.hand],
        _packed(7, obs.hand_sizes),
        _uint(8, obs.boneyard_size),
        _uint(9, obs.drawable),
        b"" if obs.drawn_tile is None else DRAWN_ENTRY[obs.drawn_tile],
        scores_bytes(obs) if scores is None else scores,
        _packed(12, obs.totals),
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
        head += _EVENT_TILE_BY_ID.get(id(tile)) or _EVENT_TILE[tile]
    if node is not None:
        head += _NODE_SET[node] if 0 <= node < 128 else b"\x30" + varint(node)
    if parent is not None:
        head += _PARENT_SET[parent] if 0 <= parent < 128 else b"\x38" + varint(parent)
    if scores:
        head += _packed(8, scores)
    if round_end:
        head += length_delimited(9, round_end.encode())
    return head


# Event.seat (4), .node (6), .parent (7) have explicit presence: written when set, 0 included
_SEAT = [b"\x20" + _SMALL[n] for n in range(128)]
_NODE_SET = [b"\x30" + _SMALL[n] for n in range(128)]
_PARENT_SET = [b"\x38" + _SMALL[n] for n in range(128)]
_EVENT_TILE_BY_ID: dict[int, bytes] = {id(t): _EVENT_TILE[t] for t in set(TILE_OF)}


def turn_bytes(
    match_id: str,
    turn_id: int,
    observation: bytes,
    moves: Sequence[bytes],
    events: Sequence[bytes],
    deadline_ms: int,
    bank_ms: int,
) -> bytes:
    """The serialized Turn message from already serialized parts.

    `moves` and `events` are serialized Move / Event messages (payloads).
    """
    mid = match_id.encode()
    return b"".join(
        (
            length_delimited(1, mid) if mid else b"",
            _uint(2, turn_id),
            length_delimited(3, observation),
            *[length_delimited(4, m) for m in moves],
            *[length_delimited(5, e) for e in events],
            _uint(6, deadline_ms),
            _uint(7, bank_ms),
        )
    )
