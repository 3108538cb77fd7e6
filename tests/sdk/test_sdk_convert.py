"""Protocol <-> domain conversion: the referee's encoding (cfarena.server.wire) decoded by the
SDK (cfarena.sdk.convert): round trips, the fast encoder, malformed messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.outcome import RoundOutcome
from cfarena.engine.rules import Draw, PlayDrawn, ResolvedRules, Start, TieBreak
from cfarena.engine.tiles import Tile
from cfarena.sdk import convert as c
from cfarena.sdk.types import (
    Fault,
    FaultKind,
    MatchInfo,
    MatchResult,
    ProtocolError,
    TimeControl,
)
from cfarena.server.wire import encode as enc
from cfarena.server.wire import raw
from cfarena.server.wire.turn_encoder import TurnEncoder
from cfarena.v1 import arena_pb2 as pb

from .sdk_samples import RULES, observation, start_events


def _turn(match_id: str, turn_id: int, obs: Observation, evs: list[Event],
          **timing: int) -> pb.Turn:
    """The reference encoding (`turn_message_bytes`), parsed: its Turn message."""
    data = enc.turn_message_bytes(match_id, turn_id, obs, evs, **timing)
    return pb.RefereeMessage.FromString(data).turn

small = st.integers(0, 300)
tiles = st.integers(0, 18).flatmap(lambda a: st.builds(Tile, st.just(a), st.integers(a, 18)))
moves = st.one_of(
    st.builds(Move.play, tiles, st.integers(0, 255)), st.sampled_from([DRAW, PASS])
)


@st.composite
def events(draw: st.DrawFn) -> Event:
    kind = draw(st.sampled_from(list(EventKind)))
    return Event(
        kind=kind,
        round_index=draw(small),
        seat=draw(st.none() | st.integers(0, 7)),
        tile=draw(st.none() | tiles),
        node=draw(st.none() | small),
        parent=draw(st.none() | small),
        scores=draw(st.lists(small, max_size=8).map(tuple))
        if kind is EventKind.ROUND_END
        else None,
        reason=draw(st.none() | st.sampled_from(list(RoundEnd))),
    )


resolved_rules = st.builds(
    ResolvedRules,
    name=st.sampled_from(["standard", "maltese", "trains", "custom"]),
    players=st.integers(2, 8),
    set_size=st.integers(3, 18),
    hand_size=st.integers(1, 30),
    start=st.sampled_from(list(Start)),
    spokes=st.integers(1, 18),
    toes=st.integers(1, 18),
    draw=st.sampled_from(list(Draw)),
    play_drawn=st.sampled_from(list(PlayDrawn)),
    boneyard_reserve=st.integers(0, 3),
    double_blank=st.sampled_from([0, 25, 50]),
    rounds=st.integers(1, 19),
    end_at_score=st.none() | st.integers(1, 1000),
    tie_break=st.sampled_from(list(TieBreak)),
)


@st.composite
def observations(draw: st.DrawFn) -> Observation:
    rules = draw(resolved_rules)
    seat = draw(st.integers(0, rules.players - 1))
    nodes = draw(
        st.lists(
            st.tuples(tiles, st.integers(0, 1000), st.integers(0, 18), st.integers(1, 8)),
            max_size=40,
        )
    )
    layout = tuple(
        PlacedTile(i, tile, None if i == 0 else p % i, value, cap, p % (cap + 1))
        for i, (tile, p, value, cap) in enumerate(nodes)
    )
    per_seat = st.lists(small, min_size=rules.players, max_size=rules.players).map(tuple)
    round_scores = tuple(draw(st.lists(per_seat, max_size=4)))
    drawn = draw(st.none() | tiles)
    return Observation(
        seat=seat,
        rules=rules,
        round_index=draw(small),
        round_double=draw(tiles),
        layout=layout,
        pending=draw(st.none() | st.integers(0, 40)),
        hand=tuple(sorted(draw(st.lists(tiles, max_size=25)))),
        hand_sizes=draw(per_seat),
        boneyard_size=draw(small),
        drawable=draw(small),
        current_seat=seat,
        drawn_tile=drawn,
        round_scores=round_scores,
        totals=draw(per_seat),
        event_count=draw(st.integers(0, 100_000)),
        legal_moves=tuple(draw(st.lists(moves, max_size=12))),
        round_outcomes=c.round_outcomes_from_events((), round_scores),
        current_has_drawn=drawn is not None,
    )


# ---------------------------------------------------------------- round trips


@given(tiles)
def test_tile_round_trip(tile: Tile) -> None:
    assert c.tile_from_proto(enc.tile_to_proto(tile)) == tile


@given(moves)
def test_move_round_trip(move: Move) -> None:
    msg = pb.Move.FromString(enc.move_to_proto(move).SerializeToString())
    assert msg.key == move.key
    assert c.move_from_proto(msg) == move


@given(events(), st.integers(0, 10_000))
def test_event_round_trip(event: Event, index: int) -> None:
    msg = enc.event_to_proto(event, index)
    assert msg.index == index
    assert c.event_from_proto(pb.Event.FromString(msg.SerializeToString())) == event


@given(st.lists(events(), max_size=6), st.integers(0, 100))
def test_fast_event_encoding_matches_protobuf(evs: list[Event], first: int) -> None:
    fast = [pb.Event.FromString(enc.event_payload(e, first + i)) for i, e in enumerate(evs)]
    assert fast == enc.events_to_proto(evs, first)


@given(resolved_rules)
def test_rules_round_trip(rules: ResolvedRules) -> None:
    assert c.rules_from_proto(enc.rules_to_proto(rules)) == rules


@settings(max_examples=100)
@given(observations())
def test_observation_round_trip(obs: Observation) -> None:
    msg = pb.Observation.FromString(enc.observation_to_proto(obs).SerializeToString())
    assert c.observation_from_proto(msg, obs.rules, obs.legal_moves) == obs


def _reference_observation(obs: Observation) -> pb.Observation:
    """The obvious constructor-based encoding the fast byte encoder must equal."""
    return pb.Observation(
        seat=obs.seat,
        round_index=obs.round_index,
        round_double=pb.Tile(a=obs.round_double.a, b=obs.round_double.b),
        layout=[
            pb.PlacedTile(
                node=p.node,
                tile=pb.Tile(a=p.tile.a, b=p.tile.b),
                parent=p.parent,
                open_value=p.open_value,
                capacity=p.capacity,
                children=p.children,
            )
            for p in obs.layout
        ],
        pending=obs.pending,
        hand=[pb.Tile(a=t.a, b=t.b) for t in obs.hand],
        hand_sizes=obs.hand_sizes,
        boneyard_size=obs.boneyard_size,
        drawable=obs.drawable,
        drawn_tile=pb.Tile(a=obs.drawn_tile.a, b=obs.drawn_tile.b) if obs.drawn_tile else None,
        round_scores=[pb.RoundScores(scores=r) for r in obs.round_scores],
        totals=obs.totals,
        event_count=obs.event_count,
    )


@settings(max_examples=100)
@given(observations(), st.lists(events(), max_size=5), st.text(max_size=20), small)
def test_fast_turn_encoding_matches_protobuf(
    obs: Observation, evs: list[Event], match_id: str, turn_id: int
) -> None:
    reference_obs = _reference_observation(obs)
    assert enc.observation_to_proto(obs) == reference_obs
    assert reference_obs.HasField("pending") == (obs.pending is not None)
    first = obs.event_count - len(evs)
    if first < 0:
        with pytest.raises(ValueError, match="new events but event_count"):
            enc.turn_message_bytes(match_id, turn_id, obs, evs, deadline_ms=1500)
        with pytest.raises(ValueError, match="new events but event_count"):
            TurnEncoder(match_id).encode(turn_id, obs, evs, deadline_ms=1500)
        return
    msg = _turn(match_id, turn_id, obs, evs, deadline_ms=1500, bank_ms=7)
    expected = pb.Turn(
        match_id=match_id,
        turn_id=turn_id,
        observation=reference_obs,
        legal_moves=[enc.move_to_proto(m) for m in obs.legal_moves],
        events=[enc.event_to_proto(e, first + i) for i, e in enumerate(evs)],
        deadline_ms=1500,
        bank_ms=7,
    )
    assert msg == expected
    # the referee's incremental encoder, fresh and after encoding another Turn first
    encoder = TurnEncoder(match_id)
    for _ in range(2):
        data = encoder.encode(turn_id, obs, evs, deadline_ms=1500, bank_ms=7)
        assert pb.RefereeMessage.FromString(data) == pb.RefereeMessage(turn=expected)


@given(
    st.integers(0, 300), tiles, st.none() | st.integers(0, 300),
    st.integers(0, 300), st.integers(0, 300), st.integers(0, 300),
)
def test_placed_entry_bytes_equal_protobuf(
    node: int, tile: Tile, parent: int | None, open_value: int, capacity: int, children: int
) -> None:
    """The hand-written layout entry is byte for byte what protobuf writes (both paths)."""
    placed = PlacedTile(node, tile, parent, open_value, capacity, children)
    reference = pb.Observation(layout=[pb.PlacedTile(
        node=node, tile=pb.Tile(a=tile.a, b=tile.b), parent=parent,
        open_value=open_value, capacity=capacity, children=children,
    )])
    assert raw.placed_entry(placed) == reference.SerializeToString()


def test_turn_round_trip_accumulates_history() -> None:
    obs = observation(event_count=2)
    msg = _turn("m", 3, obs, start_events(), deadline_ms=900, bank_ms=50)
    before = (Event(EventKind.PASS, 0, seat=0),)
    turn = c.turn_from_proto(msg, RULES, history=before, received_at=12.5)
    assert turn.observation == obs
    assert not turn.observation.current_has_drawn
    assert turn.legal_moves == obs.legal_moves
    assert turn.events == start_events()
    assert turn.history == before + start_events()
    assert (turn.match_id, turn.turn_id, turn.deadline_ms, turn.bank_ms) == ("m", 3, 900, 50)
    assert [e.index for e in msg.events] == [0, 1]


def test_turn_derives_round_outcomes_and_drawn_state() -> None:
    end = Event(EventKind.ROUND_END, 0, seat=1, scores=(9, 0), reason=RoundEnd.WENT_OUT)
    blocked = Event(EventKind.ROUND_END, 1, scores=(4, 6), reason=RoundEnd.BLOCKED)
    obs = replace(
        observation(event_count=3, drawn=Tile(3, 9)),
        round_index=2,
        round_scores=((9, 0), (4, 6)),
        totals=(13, 6),
    )
    msg = _turn("m", 8, obs, [blocked], deadline_ms=100)
    turn = c.turn_from_proto(msg, RULES, history=(start_events()[0], end), received_at=0.0)
    assert turn.observation.round_outcomes == (
        RoundOutcome(0, RoundEnd.WENT_OUT, (9, 0), 1),
        RoundOutcome(1, RoundEnd.BLOCKED, (4, 6), None),
    )
    assert turn.observation.current_has_drawn
    assert turn.observation.drawn_tile == Tile(3, 9)


def test_match_start_and_end_round_trip() -> None:
    info = MatchInfo("m-1", 1, RULES, ("x", "y"), TimeControl(500, 3000, 100, 2), tournament_id=9)
    assert c.match_start_from_proto(enc.match_start_to_proto(info)) == info
    result = MatchResult(
        match_id="m-1",
        totals=(3, 70),
        ranks=(1, 2),
        round_scores=((3, 20), (0, 50)),
        faults=(Fault(1, FaultKind.TIMEOUT, "late by 20 ms", 17, forfeit=True),),
        forfeited=(1,),
        reason="aborted",
        seat=0,
    )
    msg = pb.MatchEnd.FromString(enc.match_end_to_proto(result).SerializeToString())
    assert c.match_end_from_proto(msg, seat=0) == result
    assert c.match_end_from_proto(msg, seat=0).rank == 1


def test_match_end_discloses_no_seed_and_no_deal() -> None:
    """MatchEnd has no seed or deals fields any more (reserved on the wire)."""
    fields = {f.name for f in pb.MatchEnd.DESCRIPTOR.fields}
    assert not fields & {"seed", "deals"}
    assert not {f.number for f in pb.MatchEnd.DESCRIPTOR.fields} & {9, 10}
    assert not hasattr(pb, "RoundDeal")
    # what an older referee sent in fields 9 and 10 is skipped, not decoded
    old = pb.MatchEnd(match_id="m", reason="rounds_played").SerializeToString()
    old += bytes([9 << 3]) + bytes([42]) + bytes([10 << 3 | 2, 0])
    result = c.match_end_from_proto(pb.MatchEnd.FromString(old))
    assert result.match_id == "m" and result.reason == "rounds_played"
    assert not {"seed", "deals"} & set(MatchResult.__dataclass_fields__)


def test_move_key_may_name_the_tile_either_way() -> None:
    msg = pb.Move(kind=pb.MOVE_KIND_PLAY, tile=pb.Tile(a=4, b=9), parent=3, key="9-4@3")
    assert c.move_from_proto(msg) == Move(MoveKind.PLAY, Tile(4, 9), 3)


def test_cached_messages_are_shared() -> None:
    assert enc.tile_to_proto(Tile(2, 5)) is enc.tile_to_proto(Tile(2, 5))
    move = Move.play(Tile(2, 5), 4)
    assert enc.move_to_proto(move) is enc.move_to_proto(Move.play(Tile(2, 5), 4))


# -------------------------------------------------------------- malformed


def _k(n: int) -> Any:
    """A raw enum number (the stubs only admit the named values)."""
    return n


@pytest.mark.parametrize(
    ("decode", "msg", "match"),
    [
        (c.tile_from_proto, pb.Tile(a=5, b=4), "5-4 is not a tile"),
        (c.tile_from_proto, pb.Tile(a=3, b=19), "3-19 is not a tile"),
        (c.move_from_proto, pb.Move(kind=pb.MOVE_KIND_PLAY, parent=2, key="x"), "without a tile"),
        (c.move_from_proto, pb.Move(kind=_k(7), key="pass"), "unknown or unspecified MoveKind 7"),
        (c.move_from_proto, pb.Move(key="pass"), "MoveKind 0"),
        (
            c.move_from_proto,
            pb.Move(kind=pb.MOVE_KIND_PLAY, tile=pb.Tile(a=1, b=2), parent=0, key="1-3@0"),
            "does not match",
        ),
        (
            c.move_from_proto,
            pb.Move(kind=pb.MOVE_KIND_PASS, tile=pb.Tile(a=1, b=2), key="pass"),
            "carries no tile",
        ),
        (c.event_from_proto, pb.Event(index=4, kind=_k(0)), "event #4: unknown or unspecified"),
        (c.event_from_proto, pb.Event(kind=_k(42)), "EventKind 42"),
        (c.event_from_proto, pb.Event(kind=_k(7), round_end="tired"), "unknown value 'tired'"),
        (c.event_from_proto, pb.Event(kind=_k(4), tile=pb.Tile(a=9, b=2)), "9-2 is not a tile"),
        (c.fault_from_proto, pb.Fault(kind=_k(9)), "FaultKind 9"),
    ],
)
def test_malformed_messages_raise_protocol_error(decode: object, msg: object, match: str) -> None:
    assert callable(decode)
    with pytest.raises(ProtocolError, match=match):
        decode(msg)


def test_malformed_rules_and_observations() -> None:
    good = enc.rules_to_proto(RULES)
    for field, value, match in (
        ("start", "whenever", "rules.start"),
        ("players", 9, "players must be 2-8"),
        ("set_size", 2, "set_size"),
        ("tie_break", "", "rules.tie_break"),
    ):
        bad = pb.Rules()
        bad.CopyFrom(good)
        setattr(bad, field, value)
        with pytest.raises(ProtocolError, match=match):
            c.rules_from_proto(bad)
    obs = enc.observation_to_proto(observation())
    swapped = pb.Observation()
    swapped.CopyFrom(obs)
    swapped.layout[1].node = 5
    with pytest.raises(ProtocolError, match="entry 1 has node id 5"):
        c.observation_from_proto(swapped, RULES)
    far = pb.Observation()
    far.CopyFrom(obs)
    far.seat = 2
    with pytest.raises(ProtocolError, match="seat 2 at a 2-player table"):
        c.observation_from_proto(far, RULES)
    assert issubclass(ProtocolError, ValueError)


def test_turn_encoder_matches_the_plain_encoding_over_whole_matches() -> None:
    """The referee's cached TurnEncoder gives the same bytes as turn_message_bytes."""
    import random as _random

    from cfarena.engine import (
        Rules,
        apply_move,
        legal_moves,
        needs_decision,
        new_match,
        observe,
        visible_events,
    )
    from cfarena.server.wire.encode import turn_message_bytes

    for preset, players in (("standard", 4), ("maltese", 3), ("trains", 2)):
        state = new_match(Rules.preset(preset).with_options(rounds=2), players, 9)
        encoder = TurnEncoder("m1")
        sent = [0] * players
        rng = _random.Random(1)
        turns = 0
        while not state.is_over:
            seat = state.current_seat
            assert seat is not None
            moves = legal_moves(state)
            if needs_decision(moves):
                events = visible_events(state, seat, sent[seat])
                obs = observe(state, seat)
                plain = turn_message_bytes("m1", turns, obs, events, deadline_ms=1000,
                                           legal_moves=moves)
                cached = encoder.encode(turns, obs, events, deadline_ms=1000, legal_moves=moves)
                assert cached == plain
                sent[seat] += len(events)
                turns += 1
            apply_move(state, rng.choice(moves))
        assert turns > 20
