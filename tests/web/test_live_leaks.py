"""The live view shows only what the public events show (docs/WEB.md, security rules).

The leak harness's method (tests/referee/test_leaks.py): matches that differ only in
what the events hide (a seat's other tiles, the boneyard order, whether a drawn tile
fits and was kept under play_drawn="may", and so where the referee waited for a
decision) must give the same live stream, byte for byte. The hub is driven as the
referee drives it: forced moves are applied at once, and the hub looks (`tick`, and a
new viewer joining) at every decision, the finest a spectator could ever see. The
spectator's table (`PublicTable`), folded from public events alone, is checked
against the engine's own public view after every move of whole matches.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable

import pytest

from cfarena.engine import (
    EventKind,
    Move,
    MoveKind,
    PlacedTile,
    Rules,
    Tile,
    apply_move,
    legal_moves,
    needs_decision,
    new_match,
    public_events,
    public_view,
)
from cfarena.engine.rules import resolve_rules
from cfarena.engine.state import MatchState
from cfarena.engine.tile_codes import code_of, set_codes, tile_of
from cfarena.match.record import MatchRecord, TimeControl
from cfarena.server.storage import MatchStatus
from cfarena.server.web import LiveHub
from cfarena.server.web.live import (
    EVENT_KEYS,
    PLACED_KEYS,
    TABLE_KEYS,
    PublicTable,
    public_cut,
)

Chooser = Callable[[MatchState, tuple[Move, ...]], Move]


def _record(match_id: str) -> MatchRecord:
    return MatchRecord(match_id, Rules.preset("maltese"), 2, 5, ["a", "b"], TimeControl(),
                       status=MatchStatus.FINISHED)


def _stream(state: MatchState, choose: Chooser, look_at_drawn: bool = True
            ) -> list[tuple[str, str]]:
    """Everything the hub sends while `state` is played to its end like the referee
    plays it: two viewers, one from the start, one joining at the first decision that
    is not about a drawn tile; the hub looks at the start and at every decision
    (`look_at_drawn` False: not at those about a drawn tile, which only some of the
    worlds compared have)."""
    sent: list[tuple[str, str]] = []

    async def run() -> None:
        hub = LiveHub(coalesce_s=0)  # no clock: it looks where the test says
        early = hub.watch_match("m")
        hub.playing("m", state)
        hub.tick()  # the referee sends MatchStart: the hub may look
        late = None
        while not state.is_over:
            moves = legal_moves(state)
            if needs_decision(moves):  # the referee waits here: the hub may look
                on_drawn = bool(state.events) and state.events[-1].kind is EventKind.DRAW
                if late is None and not on_drawn:
                    late = hub.watch_match("m")
                if look_at_drawn or not on_drawn:
                    hub.tick()
                move = choose(state, moves)
            else:
                move = moves[0]
            apply_move(state, move)
        hub.ended("m", _record("m"))
        for viewer in (early, late):
            assert viewer is not None
            while not viewer.queue.empty():
                item = viewer.queue.get_nowait()
                assert item is not None
                sent.append(item)
            sent.append(("<viewer>", ""))

    asyncio.run(run())
    return sent


def _t(text: str) -> int:
    a, b = text.split("-")
    return code_of(Tile(*sorted((int(a), int(b)))))


# A maltese table (play_drawn="may") for two: the centre 6-6 full, open ends 1 and 2 only.
_LAYOUT = [(None, "6-6", 6, 4, 4), (0, "6-1", 1, 1, 0), (0, "6-2", 2, 1, 0),
           (0, "6-3", 3, 1, 1), (0, "6-4", 4, 1, 1), (3, "3-1", 1, 1, 0), (4, "4-2", 2, 1, 0)]


def _position(hand0: list[str], top: str) -> MatchState:
    """Seat 0 to move with `hand0` (nothing in it fits: it must draw), `top` the tile it
    draws; seat 1 holds 1-2 and goes out with it next. The rest of the boneyard in an
    order that depends on `top` (so the boneyard order differs too)."""
    rules = resolve_rules(Rules.preset("maltese").with_options(rounds="single"), 2)
    layout = [PlacedTile(i, tile_of(_t(tile)), parent, value, cap, kids)
              for i, (parent, tile, value, cap, kids) in enumerate(_LAYOUT)]
    hands = [[_t(t) for t in hand0], [_t("1-2")]]
    used = {code_of(p.tile) for p in layout} | {c for h in hands for c in h} | {_t(top)}
    rest = sorted(set(set_codes(rules.set_size)) - used)
    random.Random(_t(top)).shuffle(rest)
    return MatchState.from_position(rules, 1, round_index=0, round_outcomes=[],
                                    event_offset=0, hands=hands, boneyard=[_t(top), *rest],
                                    layout=layout, pending=None, current_seat=0,
                                    has_drawn=False)


def _keep_drawn(state: MatchState, moves: tuple[Move, ...]) -> Move:
    """Pass (keep the drawn tile) when that is allowed; otherwise the first move."""
    passing = [m for m in moves if m.kind is MoveKind.PASS]
    return passing[0] if passing else moves[0]


@pytest.mark.parametrize("other", [
    (["3-4", "0-5"], "0-6"),  # other tiles in hand; draws a tile that does not fit
    (["4-5", "0-3"], "3-3"),
    (["4-5", "0-3"], "1-5"),  # draws a tile that fits (it may play it) and keeps it
])
def test_hidden_choices_give_the_same_live_stream(other: tuple[list[str], str]) -> None:
    # the reference: seat 0 holds 3-4 and 0-5, draws 1-5 (it fits the 1s) and keeps it;
    # the referee waits for seat 0 after its draw, which it never does when the tile
    # does not fit (the pass is forced). Every hand scores 12 + 6 pips: the public
    # events are the same; what the events hide is not.
    reference = _position(["3-4", "0-5"], "1-5")
    assert needs_decision(_after_draw(_position(["3-4", "0-5"], "1-5")))
    hand0, top = other
    world = _position(hand0, top)
    fits = top == "1-5"
    assert needs_decision(_after_draw(_position(hand0, top))) is fits
    a, b = _stream(reference, _keep_drawn), _stream(world, _keep_drawn)
    assert [e.kind for e in public_events(reference)] == [e.kind for e in public_events(world)]
    assert len(a) >= 4 and a == b


def _after_draw(state: MatchState) -> tuple[Move, ...]:
    (draw,) = legal_moves(state)
    assert draw.kind is MoveKind.DRAW
    apply_move(state, draw)
    return legal_moves(state)


@pytest.mark.parametrize(("preset", "players", "seed"), [
    ("maltese", 2, 3), ("maltese", 4, 6), ("standard", 3, 5), ("trains", 2, 2)])
def test_the_public_table_is_the_engines_public_view(preset: str, players: int,
                                                    seed: int) -> None:
    """Folded from public events only, after every move of a whole match (every
    start rule: holder, with the setup draws of round 2 of maltese 4p seed 6; centre
    first; draw-off) it is the engine's public view."""
    rules = Rules.preset(preset).with_options(rounds="2")
    state = new_match(rules, players=players, seed=seed)
    table = PublicTable.start(public_view(state), public_events(state), 0)
    rng = random.Random(seed)
    while not state.is_over:
        apply_move(state, rng.choice(legal_moves(state)))
        table.fold(public_events(state, table.count))
        view = public_view(state)
        assert (table.round_index, table.round_double, tuple(table.layout), table.pending,
                tuple(table.hand_sizes), table.boneyard, tuple(table.round_scores),
                tuple(table.totals)) == (
            view.round_index, str(view.round_double), view.layout, view.pending,
            view.hand_sizes, view.boneyard_size, view.round_scores, view.totals)
        assert table.to_move == state.current_seat
    assert len(table.round_scores) == 2


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_a_message_never_ends_where_only_a_decision_could_stop_it(seed: int) -> None:
    """A whole maltese match, seats keeping about half their fitting drawn tiles:
    every message holds only the public keys and ends where the match started, where
    it ended, or just before a PLAY that began a turn; and the stream is the same as
    when the hub never looks while a drawn tile is being decided on."""
    rules = Rules.preset("maltese").with_options(rounds="2")
    rng = random.Random(seed)
    keeps = [rng.random() < 0.5 for _ in range(10_000)]
    kept = [0]

    def choose(state: MatchState, moves: tuple[Move, ...]) -> Move:
        if keeps[len(state.events)] and moves[-1].kind is MoveKind.PASS:
            kept[0] += 1
            return moves[-1]  # a fitting drawn tile, kept
        return moves[0]

    state = new_match(rules, players=3, seed=seed)
    stream = _stream(state, choose)
    assert kept[0] >= 2, "no fitting drawn tile was kept: the case tests nothing"
    events = public_events(state)
    start = next(i for i, e in enumerate(events) if e.kind is EventKind.CENTRE) + 1
    ends = []
    for kind, text in stream:
        if kind in ("<viewer>", "ended"):
            continue
        message = json.loads(text)
        assert set(message) == TABLE_KEYS
        assert all(set(e) == EVENT_KEYS for e in message["events"])
        assert all(set(p) == PLACED_KEYS for p in message["layout"])
        end = message["event_count"]
        ends.append(end)
        assert end in (start, len(events)) or (
            events[end].kind is EventKind.PLAY and events[end - 1].kind is not EventKind.DRAW
        ), (end, events[end - 1: end + 1])
    assert len(ends) > 20
    kept[0] = 0
    again = new_match(rules, players=3, seed=seed)
    assert _stream(again, choose, look_at_drawn=False) == stream


def test_public_cut() -> None:
    state = _position(["3-4", "0-5"], "1-5")
    assert public_cut(state.events, 0) == 0
    _after_draw(state)  # [DRAW]: the seat decides on it: shown only up to before it
    assert public_cut(state.events, 0) == 0
    apply_move(state, legal_moves(state)[-1])  # keeps it: [DRAW, PASS]
    assert public_cut(state.events, 0) == 2
