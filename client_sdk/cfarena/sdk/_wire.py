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


def _uint(field: int, n: int) -> bytes:
    """A proto3 scalar: omitted when 0."""
    if not n:
        return b""
    return _INT_KEY[field] + (_SMALL[n] if 0 < n < 128 else varint(n))


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
_HAND_ENTRY = {t: length_delimited(6, p) for t, p in TILE_BYTES.items()}
_ROUND_DOUBLE = {t: length_delimited(3, p) for t, p in TILE_BYTES.items()}
_EVENT_TILE = {t: length_delimited(5, p) for t, p in TILE_BYTES.items()}
_DRAWN = {t: length_delimited(10, p) for t, p in TILE_BYTES.items()}


_PLACED_LIMIT = 1 << 17
# id(placed tile) -> (the placed tile, its entry). Keyed by identity: the engine
# keeps its PlacedTile objects between observations, and a dataclass __hash__
# (a Python call per tile) would cost more than the encoding it saves. The
# stored reference keeps the id from being reused while the entry lives.
_placed: dict[int, tuple[PlacedTile, bytes]] = {}
# id(tile) -> hand entry, for the engine's interned tile objects (they live as
# long as the module, so their ids are stable); other Tile objects go by value
_HAND_BY_ID: dict[int, bytes] = {id(t): _HAND_ENTRY[t] for t in set(TILE_OF)}


def _hand_entry(t: Tile) -> bytes:
    entry = _HAND_BY_ID.get(id(t))
    return entry if entry is not None else _HAND_ENTRY[t]


def _layout_entry(p: PlacedTile) -> bytes:
    cached = _placed.get(id(p))
    if cached is not None and cached[0] is p:
        return cached[1]
    return _placed_entry(p)


def _placed_entry(p: PlacedTile) -> bytes:
    """Observation.layout entry (field 4) of a placed tile."""
    payload = b"".join(
        (
            _uint(1, p.node),
            length_delimited(2, TILE_BYTES[p.tile]),
            b"" if p.parent is None else b"\x18" + varint(p.parent),
            _uint(4, p.open_value),
            _uint(5, p.capacity),
            _uint(6, p.children),
        )
    )
    entry = length_delimited(4, payload)
    if len(_placed) >= _PLACED_LIMIT:
        _placed.clear()
    _placed[id(p)] = (p, entry)
    return entry


def layout_bytes(layout: Sequence[PlacedTile]) -> bytes:
    """The Observation.layout entries (field 4) of a layout, concatenated."""
    return b"".join([_layout_entry(p) for p in layout])


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
        _ROUND_DOUBLE[obs.round_double],
        layout_bytes(obs.layout) if layout is None else layout,
        b"" if obs.pending is None else b"\x28" + varint(obs.pending),
        *[_hand_entry(t) for t in obs.hand],
        _packed(7, obs.hand_sizes),
        _uint(8, obs.boneyard_size),
        _uint(9, obs.drawable),
        b"" if obs.drawn_tile is None else _DRAWN[obs.drawn_tile],
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
    return b"".join(
        (
            _uint(1, index),
            _uint(2, kind),
            _uint(3, round_index),
            b"" if seat is None else b"\x20" + varint(seat),
            b"" if tile is None else _EVENT_TILE[tile],
            b"" if node is None else b"\x30" + varint(node),
            b"" if parent is None else b"\x38" + varint(parent),
            _packed(8, scores or ()),
            length_delimited(9, round_end.encode()) if round_end else b"",
        )
    )


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
