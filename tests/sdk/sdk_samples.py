"""Hand-built domain values and protocol messages shared by the SDK tests."""

from __future__ import annotations

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import PASS, Move
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.rules import ResolvedRules, Rules
from cfarena.engine.tiles import Tile
from cfarena.sdk.types import MatchInfo, MatchResult, TimeControl
from cfarena.server.wire.encode import (
    match_end_to_proto,
    match_start_to_proto,
    turn_message_bytes,
)
from cfarena.v1 import arena_pb2 as pb

RULES: ResolvedRules = Rules.preset("standard").resolve(2)


def observation(
    seat: int = 0,
    moves: tuple[Move, ...] = (Move.play(Tile(3, 9), 0), Move.play(Tile(9, 9), 0)),
    event_count: int = 2,
    drawn: Tile | None = None,
    rules: ResolvedRules = RULES,
) -> Observation:
    return Observation(
        seat=seat,
        rules=rules,
        round_index=0,
        round_double=Tile(9, 9),
        layout=(PlacedTile(0, Tile(9, 9), None, 9, 6, 1), PlacedTile(1, Tile(5, 9), 0, 5, 1, 0)),
        pending=0,
        hand=(Tile(1, 2), Tile(3, 9), Tile(9, 9)),
        hand_sizes=(3, 19),
        boneyard_size=14,
        drawable=14,
        current_seat=seat,
        drawn_tile=drawn,
        round_scores=(),
        totals=(0, 0),
        event_count=event_count,
        legal_moves=moves,
    )


def start_events() -> tuple[Event, ...]:
    return (
        Event(EventKind.ROUND_START, 0, seat=1, tile=Tile(9, 9)),
        Event(EventKind.PLAY, 0, seat=1, tile=Tile(5, 9), node=1, parent=0),
    )


def match_start(match_id: str, seat: int = 0) -> pb.RefereeMessage:
    info = MatchInfo(match_id, seat, RULES, ("a", "b"), TimeControl(1000, 0, 0, 3))
    return pb.RefereeMessage(match_start=match_start_to_proto(info))


def turn(
    match_id: str,
    turn_id: int,
    events: tuple[Event, ...] = (),
    event_count: int | None = None,
    moves: tuple[Move, ...] = (Move.play(Tile(3, 9), 0), Move.play(Tile(9, 9), 0), PASS),
    seat: int = 0,
) -> pb.RefereeMessage:
    count = len(events) if event_count is None else event_count
    obs = observation(seat=seat, moves=moves, event_count=count)
    data = turn_message_bytes(match_id, turn_id, obs, events, deadline_ms=2000)
    return pb.RefereeMessage.FromString(data)


def result(match_id: str) -> MatchResult:
    return MatchResult(
        match_id=match_id,
        totals=(0, 12),
        ranks=(1, 2),
        round_scores=((0, 12),),
        faults=(),
        forfeited=(),
        reason="rounds_played",
    )


def match_end(match_id: str, first_index: int = 0) -> pb.RefereeMessage:
    end_event = Event(EventKind.ROUND_END, 0, seat=0, scores=(0, 12), reason=RoundEnd.WENT_OUT)
    end = match_end_to_proto(result(match_id), [end_event], first_index)
    return pb.RefereeMessage(match_end=end)


def welcome(name: str = "tester") -> pb.RefereeMessage:
    return pb.RefereeMessage(welcome=pb.Welcome(bot_name=name, server_version="fake", capacity=2))
