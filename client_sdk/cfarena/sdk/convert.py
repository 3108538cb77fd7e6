"""Protocol -> domain decoding: how a bot reads what the referee sends.

Decoding validates: a message that breaks the contract of arena.proto (unknown
or unspecified enum value, a tile `a-b` with `a > b` or an end above 18, a
PLAY without a tile, ...) raises `ProtocolError` (a `ValueError`) naming what
is wrong.

This module also holds the enum tables of the protocol (`EVENT_KIND_TO_PB`,
`FAULT_KIND_TO_PB`): the referee's encoder (`cfarena.server.wire.encode`, not
part of the SDK distribution) imports them from here, so the two directions
cannot disagree on a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.outcome import RoundOutcome
from cfarena.engine.rules import Draw, PlayDrawn, ResolvedRules, Start, TieBreak
from cfarena.engine.tiles import MAX_SET, MIN_SET, Tile
from cfarena.sdk.types import (
    Fault,
    FaultKind,
    MatchInfo,
    MatchResult,
    ProtocolError,
    TimeControl,
    Turn,
)
from cfarena.v1 import arena_pb2 as pb

__all__ = [
    "EVENT_KIND_TO_PB",
    "FAULT_KIND_TO_PB",
    "ProtocolError",
    "event_from_proto",
    "events_from_proto",
    "fault_from_proto",
    "match_end_from_proto",
    "match_start_from_proto",
    "move_from_proto",
    "observation_from_proto",
    "round_outcomes_from_events",
    "rules_from_proto",
    "tile_from_proto",
    "time_control_from_proto",
    "turn_from_proto",
]

_STRIDE = MAX_SET + 1  # a tile's code is a * _STRIDE + b

# ----------------------------------------------------------------------- enums

# the protocol's enum numbers of the engine's enums (both directions use these)
EVENT_KIND_TO_PB: dict[EventKind, pb.EventKind] = {
    EventKind.ROUND_START: pb.EVENT_KIND_ROUND_START,
    EventKind.DRAW_OFF: pb.EVENT_KIND_DRAW_OFF,
    EventKind.CENTRE: pb.EVENT_KIND_CENTRE,
    EventKind.PLAY: pb.EVENT_KIND_PLAY,
    EventKind.DRAW: pb.EVENT_KIND_DRAW,
    EventKind.PASS: pb.EVENT_KIND_PASS,
    EventKind.ROUND_END: pb.EVENT_KIND_ROUND_END,
}
_EVENT_KIND_FROM_PB = {v: k for k, v in EVENT_KIND_TO_PB.items()}
FAULT_KIND_TO_PB: dict[FaultKind, pb.FaultKind] = {
    FaultKind.TIMEOUT: pb.FAULT_KIND_TIMEOUT,
    FaultKind.ILLEGAL: pb.FAULT_KIND_ILLEGAL,
    FaultKind.PROTOCOL: pb.FAULT_KIND_PROTOCOL,
    FaultKind.DISCONNECT: pb.FAULT_KIND_DISCONNECT,
    FaultKind.LIMIT: pb.FAULT_KIND_LIMIT,
}
_FAULT_KIND_FROM_PB = {v: k for k, v in FAULT_KIND_TO_PB.items()}


_E = TypeVar("_E", Start, Draw, PlayDrawn, TieBreak, RoundEnd)


def _enum_text(enum_type: type[_E], text: str, what: str) -> _E:
    try:
        return enum_type(text)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in enum_type)
        raise ProtocolError(f"{what}: unknown value {text!r} (expected {allowed})") from None


# ----------------------------------------------------------------------- tiles

# code a * 19 + b -> Tile (a <= b <= 18); built once at import
_TILES: list[Tile | None] = [None] * (_STRIDE * _STRIDE)
for _a in range(_STRIDE):
    for _b in range(_a, _STRIDE):
        _TILES[_a * _STRIDE + _b] = Tile(_a, _b)


def tile_from_proto(msg: pb.Tile, what: str = "tile") -> Tile:
    """The Tile of a message; ProtocolError unless a <= b <= 18."""
    a = msg.a
    b = msg.b
    if a > b or b > MAX_SET:
        raise ProtocolError(f"{what}: {a}-{b} is not a tile (need a <= b <= {MAX_SET})")
    tile = _TILES[a * _STRIDE + b]
    assert tile is not None
    return tile


# ----------------------------------------------------------------------- moves


def move_from_proto(msg: pb.Move) -> Move:
    """The Move of a message; its `key`, when set, must name the same move."""
    kind = msg.kind
    if kind == pb.MOVE_KIND_PLAY:
        if not msg.HasField("tile"):
            raise ProtocolError(f"move {msg.key!r}: PLAY without a tile")
        move = Move(MoveKind.PLAY, tile_from_proto(msg.tile, "move tile"), msg.parent)
    elif kind == pb.MOVE_KIND_PASS or kind == pb.MOVE_KIND_DRAW:
        if msg.HasField("tile") or msg.parent:
            raise ProtocolError(f"move {msg.key!r}: a DRAW or PASS carries no tile or parent")
        move = PASS if kind == pb.MOVE_KIND_PASS else DRAW
    else:
        raise ProtocolError(f"move {msg.key!r}: unknown or unspecified MoveKind {kind}")
    key = msg.key
    if key and key != move.key:
        try:
            same = Move.parse(key) == move
        except ValueError:
            same = False
        if not same:
            raise ProtocolError(f"move key {key!r} does not match the move {move.key!r}")
    return move


# ---------------------------------------------------------------------- events


def event_from_proto(msg: pb.Event) -> Event:
    """The Event of a message (its `index` is not part of the Event)."""
    kind = _EVENT_KIND_FROM_PB.get(msg.kind)
    if kind is None:
        raise ProtocolError(f"event #{msg.index}: unknown or unspecified EventKind {msg.kind}")
    scores = tuple(msg.scores)
    return Event(
        kind=kind,
        round_index=msg.round_index,
        seat=msg.seat if msg.HasField("seat") else None,
        tile=tile_from_proto(msg.tile, f"event #{msg.index} tile")
        if msg.HasField("tile")
        else None,
        node=msg.node if msg.HasField("node") else None,
        parent=msg.parent if msg.HasField("parent") else None,
        scores=scores if scores or kind is EventKind.ROUND_END else None,
        reason=_enum_text(RoundEnd, msg.round_end, f"event #{msg.index} round_end")
        if msg.round_end
        else None,
    )


def events_from_proto(msgs: Iterable[pb.Event]) -> tuple[Event, ...]:
    return tuple(event_from_proto(m) for m in msgs)


# ----------------------------------------------------------------------- rules


def rules_from_proto(msg: pb.Rules) -> ResolvedRules:
    """ResolvedRules of a message; ProtocolError for out-of-range numbers or unknown names."""
    if not (2 <= msg.players <= 8):
        raise ProtocolError(f"rules: players must be 2-8, got {msg.players}")
    if not (MIN_SET <= msg.set_size <= MAX_SET):
        raise ProtocolError(f"rules: set_size must be {MIN_SET}-{MAX_SET}, got {msg.set_size}")
    return ResolvedRules(
        name=msg.preset,
        players=msg.players,
        set_size=msg.set_size,
        hand_size=msg.hand_size,
        start=_enum_text(Start, msg.start, "rules.start"),
        spokes=msg.spokes,
        toes=msg.toes,
        draw=_enum_text(Draw, msg.draw, "rules.draw"),
        play_drawn=_enum_text(PlayDrawn, msg.play_drawn, "rules.play_drawn"),
        boneyard_reserve=msg.boneyard_reserve,
        double_blank=msg.double_blank,
        rounds=msg.rounds,
        end_at_score=msg.end_at_score or None,
        tie_break=_enum_text(TieBreak, msg.tie_break, "rules.tie_break"),
    )


def time_control_from_proto(msg: pb.TimeControl) -> TimeControl:
    return TimeControl(msg.move_timeout_ms, msg.bank_ms, msg.increment_ms, msg.strikes)


# ----------------------------------------------------------------- observation


def _placed_from_proto(msg: pb.PlacedTile, index: int) -> PlacedTile:
    if msg.node != index:
        raise ProtocolError(f"layout: entry {index} has node id {msg.node} (must equal its index)")
    if not msg.HasField("tile"):
        raise ProtocolError(f"layout: node {index} has no tile")
    return PlacedTile(
        node=msg.node,
        tile=tile_from_proto(msg.tile, f"layout node {index}"),
        parent=msg.parent if msg.HasField("parent") else None,
        open_value=msg.open_value,
        capacity=msg.capacity,
        children=msg.children,
    )


def round_outcomes_from_events(
    events: Iterable[Event], round_scores: Sequence[Sequence[int]] = ()
) -> tuple[RoundOutcome, ...]:
    """How finished rounds ended, from the ROUND_END events of a match's history.

    Rounds of `round_scores` without a ROUND_END event (history not seen from
    the start) are filled in as "went_out" if some seat scored 0, else "blocked".
    """
    found: dict[int, RoundOutcome] = {}
    for e in events:
        if e.kind is EventKind.ROUND_END:
            reason = e.reason or (RoundEnd.WENT_OUT if e.seat is not None else RoundEnd.BLOCKED)
            found[e.round_index] = RoundOutcome(
                e.round_index,
                reason,
                e.scores or (),
                e.seat if reason is RoundEnd.WENT_OUT else None,
            )
    for i, scores in enumerate(round_scores):
        if i not in found:
            reason = RoundEnd.WENT_OUT if 0 in scores else RoundEnd.BLOCKED
            found[i] = RoundOutcome(i, reason, tuple(scores), None)
    return tuple(found[i] for i in sorted(found))


def observation_from_proto(
    msg: pb.Observation,
    rules: ResolvedRules,
    legal_moves: Sequence[Move] = (),
    current_seat: int | None = -1,
    round_outcomes: Sequence[RoundOutcome] | None = None,
) -> Observation:
    """The Observation of a message.

    The message carries neither the rules (sent once in MatchStart) nor the
    legal moves (in the Turn) nor whose turn it is: `current_seat` defaults to
    the observing seat (a Turn is always about the receiver's own move), and
    `current_has_drawn` is then whether a drawn tile is being decided on.
    `round_outcomes` default to what `round_scores` tell (see
    `round_outcomes_from_events`; `turn_from_proto` uses the match history).
    """
    seat = msg.seat
    if seat >= rules.players:
        raise ProtocolError(f"observation: seat {seat} at a {rules.players}-player table")
    if not msg.HasField("round_double"):
        raise ProtocolError("observation: no round_double")
    drawn_tile = (
        tile_from_proto(msg.drawn_tile, "drawn_tile") if msg.HasField("drawn_tile") else None
    )
    round_scores = tuple(tuple(r.scores) for r in msg.round_scores)
    current = seat if current_seat == -1 else current_seat
    return Observation(
        seat=seat,
        rules=rules,
        round_index=msg.round_index,
        round_double=tile_from_proto(msg.round_double, "round_double"),
        layout=tuple(_placed_from_proto(p, i) for i, p in enumerate(msg.layout)),
        pending=msg.pending if msg.HasField("pending") else None,
        hand=tuple(tile_from_proto(t, "hand tile") for t in msg.hand),
        hand_sizes=tuple(msg.hand_sizes),
        boneyard_size=msg.boneyard_size,
        drawable=msg.drawable,
        current_seat=current,
        drawn_tile=drawn_tile,
        round_scores=round_scores,
        totals=tuple(msg.totals),
        event_count=msg.event_count,
        legal_moves=tuple(legal_moves),
        round_outcomes=tuple(round_outcomes)
        if round_outcomes is not None
        else round_outcomes_from_events((), round_scores),
        current_has_drawn=drawn_tile is not None and current == seat,
    )


# ----------------------------------------------------------------------- turns


def turn_from_proto(
    msg: pb.Turn,
    rules: ResolvedRules,
    *,
    history: Sequence[Event] = (),
    received_at: float,
) -> Turn:
    """A Turn from its message; `history` is the match's events seen before this Turn."""
    if not msg.legal_moves:
        raise ProtocolError(f"turn {msg.turn_id} of match {msg.match_id!r} offers no moves")
    moves = tuple(move_from_proto(m) for m in msg.legal_moves)
    events = events_from_proto(msg.events)
    ends = [e for e in (*history, *events) if e.kind is EventKind.ROUND_END]
    outcomes = round_outcomes_from_events(ends, [r.scores for r in msg.observation.round_scores])
    return Turn(
        match_id=msg.match_id,
        turn_id=msg.turn_id,
        observation=observation_from_proto(msg.observation, rules, moves, -1, outcomes),
        legal_moves=moves,
        events=events,
        history=(*history, *events),
        deadline_ms=msg.deadline_ms,
        bank_ms=msg.bank_ms,
        received_at=received_at,
    )


# ----------------------------------------------------------------- match start


def match_start_from_proto(msg: pb.MatchStart) -> MatchInfo:
    if not msg.match_id:
        raise ProtocolError("match_start: empty match_id")
    if not msg.HasField("rules"):
        raise ProtocolError(f"match_start {msg.match_id!r}: no rules")
    rules = rules_from_proto(msg.rules)
    if msg.seat >= rules.players:
        raise ProtocolError(
            f"match_start {msg.match_id!r}: seat {msg.seat} at a {rules.players}-player table"
        )
    return MatchInfo(
        match_id=msg.match_id,
        seat=msg.seat,
        rules=rules,
        seat_names=tuple(msg.seat_names),
        time_control=time_control_from_proto(msg.time_control),
        tournament_id=msg.tournament_id,
    )


# ------------------------------------------------------------------- match end


def fault_from_proto(msg: pb.Fault, forfeit: bool = False) -> Fault:
    kind = _FAULT_KIND_FROM_PB.get(msg.kind)
    if kind is None:
        raise ProtocolError(f"fault: unknown or unspecified FaultKind {msg.kind}")
    return Fault(seat=msg.seat, kind=kind, detail=msg.detail, turn_id=msg.turn_id,
                 forfeit=forfeit)


def _forfeiting(msg: pb.MatchEnd) -> set[int]:
    """Indexes of the faults that forfeited: each forfeited seat's last one (a
    forfeited seat commits no more faults)."""
    last = {f.seat: i for i, f in enumerate(msg.faults)}
    return {last[seat] for seat in msg.forfeited if seat in last}


def match_end_from_proto(msg: pb.MatchEnd, seat: int | None = None) -> MatchResult:
    """The MatchResult of a message (its events are decoded with `events_from_proto`)."""
    forfeiting = _forfeiting(msg)
    return MatchResult(
        match_id=msg.match_id,
        totals=tuple(msg.totals),
        ranks=tuple(msg.ranks),
        round_scores=tuple(tuple(r.scores) for r in msg.round_scores),
        faults=tuple(fault_from_proto(f, i in forfeiting) for i, f in enumerate(msg.faults)),
        forfeited=tuple(msg.forfeited),
        reason=msg.reason,
        seat=seat,
    )
