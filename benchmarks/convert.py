"""Benchmark: µs per `observation_to_proto` and per whole Turn (both encoders), mid-round.

Run: `python benchmarks/convert.py`. The Observation is built by hand (no engine
needed): a standard double-9 round with 30 placed tiles, a pending-free layout,
11 legal moves and 4 new events.
"""

from __future__ import annotations

import timeit

from cfarena.engine.events import Event, EventKind
from cfarena.engine.moves import Move
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.rules import Rules
from cfarena.engine.tiles import Tile
from cfarena.sdk.convert import observation_from_proto, turn_from_proto
from cfarena.server.wire.encode import observation_to_proto, turn_message_bytes
from cfarena.server.wire.turn_encoder import TurnEncoder
from cfarena.v1 import arena_pb2 as pb


def sample_observation() -> Observation:
    rules = Rules.preset("standard").resolve(4)
    layout = [PlacedTile(0, Tile(9, 9), None, 9, 6, 6)]
    # six spokes 9-x, each with a line of four tiles below it
    node = 1
    for spoke in range(6):
        value = spoke
        layout.append(PlacedTile(node, Tile.of(9, value), 0, value, 1, 1))
        parent = node
        node += 1
        for step in range(4):
            nxt = (value + step + 1) % 9
            layout.append(
                PlacedTile(node, Tile.of(value, nxt), parent, nxt, 1, 1 if step < 3 else 0)
            )
            parent, value = node, nxt
            node += 1
    layout = layout[:30]
    hand = (Tile(0, 3), Tile(1, 5), Tile(2, 2), Tile(3, 8), Tile(4, 6), Tile(5, 7))
    moves = tuple(Move.play(t, p) for t in hand for p in (12, 20))[:11]
    return Observation(
        seat=2,
        rules=rules,
        round_index=0,
        round_double=Tile(9, 9),
        layout=tuple(layout),
        pending=None,
        hand=hand,
        hand_sizes=(5, 7, 6, 4),
        boneyard_size=10,
        drawable=10,
        current_seat=2,
        drawn_tile=None,
        round_scores=(),
        totals=(0, 0, 0, 0),
        event_count=48,
        legal_moves=moves,
    )


def main() -> None:
    obs = sample_observation()
    events = [
        Event(EventKind.PLAY, 0, seat=3, tile=Tile(1, 4), node=26, parent=25),
        Event(EventKind.DRAW, 0, seat=0),
        Event(EventKind.PASS, 0, seat=0),
        Event(EventKind.PLAY, 0, seat=1, tile=Tile(4, 6), node=29, parent=28),
    ]
    encoder = TurnEncoder("m1")
    n = 20000
    for label, fn in (
        ("observation_to_proto", lambda: observation_to_proto(obs)),
        (
            "turn_message_bytes (obs + 11 moves + 4 events)",
            lambda: turn_message_bytes("m1", 7, obs, events, deadline_ms=1000),
        ),
        (
            "TurnEncoder.encode (the same Turn again)",
            lambda: encoder.encode(7, obs, events, deadline_ms=1000),
        ),
    ):
        fn()
        best = min(timeit.repeat(fn, number=n, repeat=5)) / n
        print(f"{label:48s} {best * 1e6:7.2f} µs")
    msg = pb.RefereeMessage.FromString(
        turn_message_bytes("m1", 7, obs, events, deadline_ms=1000)).turn
    omsg = msg.observation
    for label, fn2 in (
        ("observation_from_proto", lambda: observation_from_proto(omsg, obs.rules)),
        ("turn_from_proto", lambda: turn_from_proto(msg, obs.rules, received_at=0.0)),
    ):
        fn2()
        best = min(timeit.repeat(fn2, number=n // 4, repeat=5)) / (n // 4)
        print(f"{label:48s} {best * 1e6:7.2f} µs")
    print(f"(layout {len(obs.layout)} nodes, Turn {len(msg.SerializeToString())} bytes)")


if __name__ == "__main__":
    main()
