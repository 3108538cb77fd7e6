"""RULES.md §3 (a turn): must-play, drawing, play_drawn, boneyard_reserve; forced moves."""

from __future__ import annotations

from typing import Any

import pytest

from cfarena.engine import (
    DRAW,
    PASS,
    EventKind,
    Move,
    Tile,
    apply_move,
    fallback_move,
    legal_moves,
    needs_decision,
    visible_events,
)


def test_a_player_with_a_play_must_play_even_with_a_full_boneyard(h: Any) -> None:
    state = h.deal(h.small_rules(), ["0-4 0-1", "1-4"])
    assert state.boneyard_size > 0
    moves = legal_moves(state)
    assert h.plays_only(moves) and h.keys(moves) == ["0-4@0"]


@pytest.mark.parametrize(
    ("draw", "sequence"),
    [
        # draw one: a tile that does not fit ends the turn with a pass
        ("one", [["draw"], ["pass"]]),
        # until_playable: draw again until a tile fits
        ("until_playable", [["draw"], ["draw"], ["draw"], ["1-4@0"]]),
    ],
)
def test_draw_one_or_until_playable(h: Any, draw: str, sequence: list[list[str]]) -> None:
    state = h.deal(h.small_rules(draw=draw), ["0-1", "0-4"], boneyard="1-2 2-3 1-4")
    for expected in sequence:
        assert state.current_seat == 0
        moves = legal_moves(state)
        assert h.keys(moves) == expected
        apply_move(state, moves[0])
    assert state.current_seat == 1


def test_until_playable_stops_at_the_reserve(h: Any) -> None:
    state = h.deal(
        h.small_rules(draw="until_playable", boneyard_reserve=10), ["0-1", "0-4"],
        boneyard="1-2 2-3",
    )
    # 15 - 1 - 2 = 12 tiles in the boneyard; the reserve keeps 10
    assert state.boneyard_size == 12
    for expected in (["draw"], ["draw"], ["pass"]):
        assert h.keys(legal_moves(state)) == expected
        apply_move(state, legal_moves(state)[0])
    assert state.boneyard_size == 10 and state.current_seat == 1


@pytest.mark.parametrize(
    ("play_drawn", "expected"), [("must", ["1-4@0"]), ("may", ["1-4@0", "pass"])]
)
def test_play_drawn_must_or_may(h: Any, play_drawn: str, expected: list[str]) -> None:
    state = h.deal(h.small_rules(play_drawn=play_drawn), ["0-1", "0-4"], boneyard="1-4")
    apply_move(state, DRAW)
    assert state.drawn_tile == Tile(1, 4)
    moves = legal_moves(state)
    assert h.keys(moves) == expected
    assert needs_decision(moves)
    if play_drawn == "may":
        apply_move(state, PASS)
        assert state.current_seat == 1
        assert Tile(1, 4) in state.hand(0)


def test_only_the_drawn_tile_may_be_played_after_a_draw(h: Any) -> None:
    # 2-2 and 1-4 fit only after the layout changes; seat 0 draws 0-4 which fits
    state = h.deal(h.small_rules(play_drawn="may"), ["1-1", "2-4"], boneyard="0-4")
    apply_move(state, DRAW)
    assert h.keys(legal_moves(state)) == ["0-4@0", "pass"]


@pytest.mark.parametrize(("reserve", "expected"), [(0, "draw"), (1, "draw"), (2, "pass")])
def test_boneyard_reserve(h: Any, reserve: int, expected: str) -> None:
    # seat 0 cannot play; seat 1 can, so the table is not blocked
    state = h.deal(
        h.small_rules(boneyard_reserve=reserve), ["0-1", "0-2"], boneyard="0-3 1-2", rest=1
    )
    assert state.boneyard_size == 2
    assert h.keys(legal_moves(state)) == [expected]
    assert not needs_decision(legal_moves(state))


def test_draw_events_show_the_tile_to_the_drawer_only(h: Any) -> None:
    state = h.deal(h.small_rules(), ["0-1", "0-4"], boneyard="1-2")
    start = len(state.events)
    apply_move(state, DRAW)
    event = state.events[start]
    assert event.kind is EventKind.DRAW and event.tile == Tile(1, 2)
    assert visible_events(state, 0, start)[0].tile == Tile(1, 2)
    assert visible_events(state, 1, start)[0].tile is None
    apply_move(state, PASS)
    assert state.events[-1].kind is EventKind.PASS and state.events[-1].seat == 0


def test_fallback_move_is_the_heaviest_play(h: Any) -> None:
    moves = tuple(Move.parse(k) for k in ["0-4@0", "1-3@2", "1-3@1", "2-2@5", "pass"])
    # 1-3 and 2-2 weigh 4 like 0-4: tile order first (0-4), then lowest parent
    assert fallback_move(moves).key == "0-4@0"
    assert fallback_move(moves[1:]).key == "1-3@1"
    assert fallback_move((Move.parse("3-4@1"), *moves)).key == "3-4@1"
    assert fallback_move((DRAW,)) is DRAW
    assert fallback_move((PASS,)) is PASS
    with pytest.raises(ValueError):
        fallback_move(())


def test_needs_decision() -> None:
    assert not needs_decision((DRAW,))
    assert not needs_decision((PASS,))
    assert not needs_decision(())
    assert needs_decision((Move.parse("1-4@0"),))
    assert needs_decision((Move.parse("1-4@0"), PASS))
