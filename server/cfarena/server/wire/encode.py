"""Domain -> protocol encoding: what the referee sends, as arena.proto messages.

Only the referee encodes (bots decode, with `cfarena.sdk.convert`, whose enum
tables this module uses). Encoding is on the referee's hot path (one Turn per
decision), so Tile and Move messages are built once and cached. Messages
returned by `tile_to_proto` and `move_to_proto` are those shared cached
instances: treat them as read-only (passing them to a message constructor or
`CopyFrom` copies them, which is the intended use). The referee itself writes
Turns with `turn_encoder.TurnEncoder` (the bytes of `turn_message_bytes`,
encoded incrementally).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cfarena.engine.events import Event
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation
from cfarena.engine.rules import ResolvedRules
from cfarena.engine.tiles import MAX_SET, Tile
from cfarena.sdk.convert import EVENT_KIND_TO_PB, FAULT_KIND_TO_PB
from cfarena.sdk.types import Fault, MatchInfo, MatchResult, TimeControl
from cfarena.server.wire import raw
from cfarena.v1 import arena_pb2 as pb

__all__ = [
    "event_payload",
    "event_to_proto",
    "events_to_proto",
    "fault_to_proto",
    "first_event_index",
    "match_end_to_proto",
    "match_start_to_proto",
    "move_payload",
    "move_to_proto",
    "observation_to_proto",
    "offered_moves",
    "rules_to_proto",
    "tile_to_proto",
    "time_control_to_proto",
    "turn_message_bytes",
]

# ----------------------------------------------------------------------- tiles

# Tile -> its Tile message; built once at import
_TILE_PB: dict[Tile, pb.Tile] = {
    Tile(a, b): pb.Tile(a=a, b=b) for a in range(MAX_SET + 1) for b in range(a, MAX_SET + 1)
}


def tile_to_proto(tile: Tile) -> pb.Tile:
    """The (shared, read-only) Tile message of `tile`."""
    try:
        return _TILE_PB[tile]
    except KeyError:
        raise ValueError(f"tile {tile} is outside a double-{MAX_SET} set") from None


# ----------------------------------------------------------------------- moves

_MOVE_PB: dict[Move, pb.Move] = {
    DRAW: pb.Move(kind=pb.MOVE_KIND_DRAW, key=DRAW.key),
    PASS: pb.Move(kind=pb.MOVE_KIND_PASS, key=PASS.key),
}
_MOVE_BYTES: dict[Move, bytes] = {}


def move_to_proto(move: Move) -> pb.Move:
    """The (shared, read-only) Move message of `move`, key included."""
    msg = _MOVE_PB.get(move)
    if msg is None:
        if move.kind is not MoveKind.PLAY or move.tile is None or move.parent is None:
            raise ValueError(f"not a valid move: {move!r}")
        msg = pb.Move(
            kind=pb.MOVE_KIND_PLAY,
            tile=tile_to_proto(move.tile),
            parent=move.parent,
            key=move.key,
        )
        _MOVE_PB[move] = msg
    return msg


def move_payload(move: Move) -> bytes:
    """The serialized Move message (payload, no key) of `move`, cached by value."""
    data = _MOVE_BYTES.get(move)
    if data is None:
        data = _MOVE_BYTES[move] = move_to_proto(move).SerializeToString()
    return data


# ---------------------------------------------------------------------- events


def event_to_proto(event: Event, index: int) -> pb.Event:
    """The Event message of `event`, at position `index` of the match's events."""
    msg = pb.Event(
        index=index,
        kind=EVENT_KIND_TO_PB[event.kind],
        round_index=event.round_index,
        seat=event.seat,
        node=event.node,
        parent=event.parent,
        scores=event.scores,
        round_end=event.reason.value if event.reason is not None else "",
    )
    if event.tile is not None:
        msg.tile.CopyFrom(_TILE_PB[event.tile])
    return msg


def event_payload(event: Event, index: int) -> bytes:
    """The serialized Event message (payload, no key) of the event at `index`."""
    return raw.event_bytes(
        index,
        EVENT_KIND_TO_PB[event.kind],
        event.round_index,
        event.seat,
        event.tile,
        event.node,
        event.parent,
        event.scores,
        event.reason.value if event.reason is not None else "",
    )


def events_to_proto(events: Iterable[Event], first_index: int) -> list[pb.Event]:
    """Event messages numbered from `first_index`."""
    return [event_to_proto(e, first_index + i) for i, e in enumerate(events)]


# ----------------------------------------------------------------------- rules


def rules_to_proto(rules: ResolvedRules) -> pb.Rules:
    """The Rules message (end_at_score None is sent as 0)."""
    return pb.Rules(
        preset=rules.name,
        players=rules.players,
        set_size=rules.set_size,
        hand_size=rules.hand_size,
        start=rules.start.value,
        spokes=rules.spokes,
        toes=rules.toes,
        draw=rules.draw.value,
        play_drawn=rules.play_drawn.value,
        boneyard_reserve=rules.boneyard_reserve,
        double_blank=rules.double_blank,
        rounds=rules.rounds,
        end_at_score=rules.end_at_score or 0,
        tie_break=rules.tie_break.value,
    )


def time_control_to_proto(tc: TimeControl) -> pb.TimeControl:
    return pb.TimeControl(
        move_timeout_ms=tc.move_timeout_ms,
        bank_ms=tc.bank_ms,
        increment_ms=tc.increment_ms,
        strikes=tc.strikes,
    )


# ----------------------------------------------------------------- observation


def observation_to_proto(obs: Observation) -> pb.Observation:
    """The Observation message (rules, current_seat and legal_moves travel elsewhere)."""
    return pb.Observation.FromString(raw.observation_bytes(obs))


# ----------------------------------------------------------------------- turns


def first_event_index(obs: Observation, events: Sequence[Event]) -> int:
    """The match-wide index of the first of `events`, a seat's new events, which end at
    `obs.event_count - 1` (ValueError if there are more of them than that)."""
    first = obs.event_count - len(events)
    if first < 0:
        raise ValueError(f"{len(events)} new events but event_count is only {obs.event_count}")
    return first


def offered_moves(obs: Observation, legal_moves: Sequence[Move] | None) -> Sequence[Move]:
    """The moves a Turn offers: `legal_moves`, or by default `obs.legal_moves`."""
    return obs.legal_moves if legal_moves is None else legal_moves


def turn_message_bytes(
    match_id: str,
    turn_id: int,
    obs: Observation,
    events: Sequence[Event],
    *,
    deadline_ms: int,
    bank_ms: int = 0,
    legal_moves: Sequence[Move] | None = None,
) -> bytes:
    """The serialized `RefereeMessage(turn=Turn(...))`: the reference Turn encoding.

    `events` are the seat's new ones, numbered to end at `obs.event_count - 1`;
    `legal_moves` defaults to `obs.legal_moves`. The referee writes Turns with
    `turn_encoder.TurnEncoder`, which must give these bytes exactly
    (`pb.RefereeMessage.FromString(...)` parses them).
    """
    first = first_event_index(obs, events)
    cache = _MOVE_BYTES
    entries = [raw.move_entry(cache.get(m) or move_payload(m))
               for m in offered_moves(obs, legal_moves)]
    entries += [raw.event_entry(event_payload(e, first + i)) for i, e in enumerate(events)]
    return raw.turn_message(raw.match_id_field(match_id), turn_id, raw.observation_bytes(obs),
                            entries, deadline_ms, bank_ms)


# ----------------------------------------------------------------- match start


def match_start_to_proto(info: MatchInfo) -> pb.MatchStart:
    return pb.MatchStart(
        match_id=info.match_id,
        seat=info.seat,
        rules=rules_to_proto(info.rules),
        seat_names=info.seat_names,
        time_control=time_control_to_proto(info.time_control),
        tournament_id=info.tournament_id,
    )


# ------------------------------------------------------------------- match end


def fault_to_proto(fault: Fault) -> pb.Fault:
    return pb.Fault(
        seat=fault.seat,
        kind=FAULT_KIND_TO_PB[fault.kind],
        detail=fault.detail,
        turn_id=fault.turn_id,
    )


def match_end_to_proto(
    result: MatchResult, events: Sequence[Event] = (), first_index: int = 0
) -> pb.MatchEnd:
    """A MatchEnd message; `events` (numbered from `first_index`) are the receiver's new ones."""
    return pb.MatchEnd(
        match_id=result.match_id,
        events=events_to_proto(events, first_index),
        totals=result.totals,
        ranks=result.ranks,
        round_scores=[pb.RoundScores(scores=r) for r in result.round_scores],
        faults=[fault_to_proto(f) for f in result.faults],
        forfeited=result.forfeited,
        reason=result.reason,
    )
