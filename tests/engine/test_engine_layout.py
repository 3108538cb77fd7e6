"""RULES.md §2 (layout, restriction), §8 (worked check) and preset differences."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cfarena.engine import (
    EventKind,
    IllegalMoveError,
    Move,
    Rules,
    Tile,
    apply_move,
    legal_moves,
    new_match,
)


def test_centre_spokes_come_first_then_any_open_end(h: Any) -> None:
    rules = h.small_rules(spokes=2)
    state = h.deal(rules, ["0-4 1-4 1-2", "2-4 0-2 0-1"])
    assert h.keys(legal_moves(state)) == ["0-4@0", "1-4@0"]
    apply_move(state, Move.parse("0-4@0"))
    # seat 1 holds 0-2 and 0-1 that fit node 1, but the centre is pending
    assert state.pending == 0
    assert h.keys(legal_moves(state)) == ["2-4@0"]
    apply_move(state, Move.parse("2-4@0"))
    assert state.pending is None
    assert h.keys(legal_moves(state)) == ["1-2@2"]
    apply_move(state, Move.parse("1-2@2"))
    assert h.keys(legal_moves(state)) == ["0-1@1", "0-1@3", "0-2@1"]


def test_open_ends_and_capacities(h: Any) -> None:
    state = h.deal(h.small_rules(spokes=2), ["0-4 1-1", "2-4 1-3"])
    apply_move(state, Move.parse("0-4@0"))
    apply_move(state, Move.parse("2-4@0"))
    centre, first, second = state.layout()
    assert (centre.open_value, centre.capacity, centre.children, centre.parent) == (4, 2, 2, None)
    assert (first.tile, first.open_value, first.capacity, first.parent) == (Tile(0, 4), 0, 1, 0)
    assert (second.open_value, second.capacity) == (2, 1)


TOES_HANDS = ["3-4 1-4 0-1 1-1 2-2", "3-3 0-3 1-3 2-3 1-2 2-4"]


def test_a_double_on_a_line_is_pending_until_its_toes_are_played(h: Any) -> None:
    state = h.deal(h.small_rules(spokes=2, toes=3), TOES_HANDS)
    for key in ("3-4@0", "2-4@0"):
        apply_move(state, Move.parse(key))
    assert h.keys(legal_moves(state)) == ["2-2@2"]
    apply_move(state, Move.parse("2-2@2"))
    double = state.layout()[3]
    assert (double.tile, double.capacity, double.open_value, state.pending) == (
        Tile(2, 2),
        3,
        2,
        3,
    )
    # seat 1 holds 3-3, 0-3, 1-3 that fit node 1 (open 3) — only toes are legal
    assert h.keys(legal_moves(state)) == ["1-2@3", "2-3@3"]
    apply_move(state, Move.parse("2-3@3"))
    # seat 0 has no 2: draws 0-0 (the boneyard's first tile), which does not fit
    assert h.keys(legal_moves(state)) == ["draw"]
    apply_move(state, Move.parse("draw"))
    assert state.hand(0)[0] == Tile(0, 0)
    assert h.keys(legal_moves(state)) == ["pass"]
    apply_move(state, Move.parse("pass"))
    assert h.keys(legal_moves(state)) == ["1-2@3"]
    apply_move(state, Move.parse("1-2@3"))
    apply_move(state, Move.parse("draw"))  # seat 0 draws 0-2: it fits the last toe
    assert h.keys(legal_moves(state)) == ["0-2@3"]
    apply_move(state, Move.parse("0-2@3"))
    assert state.pending is None
    assert h.keys(legal_moves(state)) == [
        "0-3@1", "0-3@4", "0-3@6", "1-3@1", "1-3@4", "1-3@5", "3-3@1", "3-3@4",
    ]


def test_a_double_on_an_end_of_its_value_is_placed_as_a_double(h: Any) -> None:
    state = h.deal(h.small_rules(spokes=1, toes=2), ["0-4 1-1", "0-0 1-2"])
    apply_move(state, Move.parse("0-4@0"))
    assert h.keys(legal_moves(state)) == ["0-0@1"]
    apply_move(state, Move.parse("0-0@1"))
    placed = state.layout()[2]
    assert (placed.capacity, placed.open_value, state.pending) == (2, 0, 2)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("2-4@0", "not in the hand of seat 0"),
        ("1-2@0", "does not contain the open end 4"),
        ("0-4@7", "no node #7"),
        ("draw", "has a legal play and must play"),
        ("pass", "has a legal play and must play"),
    ],
)
def test_illegal_moves_are_refused_with_a_reason(h: Any, key: str, reason: str) -> None:
    state = h.deal(h.small_rules(), ["0-4 1-2", "2-4"])
    before = list(state.events)
    move = Move.parse(key)
    with pytest.raises(IllegalMoveError, match=reason) as err:
        apply_move(state, move)
    assert err.value.move == move
    assert isinstance(err.value, ValueError)
    assert state.events == before  # nothing changed


def test_illegal_plays_elsewhere_while_a_double_is_pending(h: Any) -> None:
    state = h.deal(h.small_rules(spokes=2, toes=3), TOES_HANDS)
    for key in ("3-4@0", "2-4@0", "2-2@2"):
        apply_move(state, Move.parse(key))
    with pytest.raises(IllegalMoveError, match="pending"):
        apply_move(state, Move.parse("3-3@1"))
    apply_move(state, Move.parse("2-3@3"))
    with pytest.raises(IllegalMoveError, match="no free end"):
        apply_move(state, Move.parse("1-4@2"))


# ------------------------------------------------------------------ §8 check
def test_worked_check_deal_and_first_six_spokes() -> None:
    rules = Rules.preset("standard")
    for seed in range(20):
        state = new_match(rules, 4, seed)
        deal = state.deals[0]
        assert [len(hand) for hand in deal.hands] == [11, 11, 11, 11]
        assert len(deal.boneyard) == 10
        assert state.round_double == Tile(9, 9)
        rng = random.Random(seed)
        plays = 0
        while plays < 6:
            for move in legal_moves(state):
                if move.tile is not None:
                    assert move.parent == 0 and move.tile.has(9)
            events = apply_move(state, h_choice(rng, legal_moves(state)))
            plays += sum(1 for e in events if e.kind is EventKind.PLAY)
        spokes = [e for e in state.events if e.kind is EventKind.PLAY]
        assert all(e.parent == 0 and e.tile is not None and e.tile.has(9) for e in spokes)


def h_choice(rng: random.Random, moves: tuple[Move, ...]) -> Move:
    return moves[rng.randrange(len(moves))]


WORKED_HANDS = ["9-2 9-7 3-8", "9-3 4-4 5-8", "9-4 4-5 1-8", "9-1 9-6 0-4 2-8"]


def test_worked_check_pending_four_four(h: Any) -> None:
    state = h.deal(Rules.preset("standard"), WORKED_HANDS, boneyard="6-8 4-6", first=3)
    for key in ("9-1@0", "9-2@0", "9-3@0", "9-4@0", "9-6@0", "9-7@0"):
        apply_move(state, Move.parse(key))
    assert state.layout()[4].tile == Tile(4, 9) and state.layout()[4].open_value == 4
    assert h.keys(legal_moves(state)) == ["4-4@4"]  # seat 1
    apply_move(state, Move.parse("4-4@4"))
    assert state.pending == 7
    assert h.keys(legal_moves(state)) == ["4-5@7"]  # seat 2; 1-8 would fit #1
    apply_move(state, Move.parse("4-5@7"))
    assert h.keys(legal_moves(state)) == ["0-4@7"]  # seat 3; 2-8 would fit #2
    apply_move(state, Move.parse("0-4@7"))
    assert h.keys(legal_moves(state)) == ["draw"]  # seat 0 holds no 4
    apply_move(state, Move.parse("draw"))  # 6-8 does not fit
    assert h.keys(legal_moves(state)) == ["pass"]
    apply_move(state, Move.parse("pass"))
    assert h.keys(legal_moves(state)) == ["draw"]  # seat 1 holds no 4 either
    apply_move(state, Move.parse("draw"))  # 4-6 fits: must be played
    assert h.keys(legal_moves(state)) == ["4-6@7"]
    apply_move(state, Move.parse("4-6@7"))
    assert state.pending is None
    assert h.keys(legal_moves(state)) == ["1-8@1"]  # seat 2, restriction lifted


def test_worked_check_score_with_double_blank(h: Any) -> None:
    state = h.deal(Rules.preset("standard"), ["9-8", "0-0 3-6"], rest=None)
    apply_move(state, Move.parse("9-8@0"))
    first = state.round_outcomes[0]
    assert first.scores == (0, 59)
    assert first.went_out == 0
    end = next(e for e in state.events if e.kind is EventKind.ROUND_END)
    assert (end.scores, end.seat) == ((0, 59), 0)


# ------------------------------------------------------- preset differences
SPOKE_HANDS = ["9-0 9-1 9-2 9-3 0-5", "9-4 9-5 9-6 9-7 1-8"]


@pytest.mark.parametrize(
    ("preset", "after_two", "after_four"),
    [
        ("standard", ["1-9@0", "2-9@0", "3-9@0"], ["2-9@0", "3-9@0"]),
        ("maltese", ["1-9@0", "2-9@0", "3-9@0"], ["0-5@1", "0-5@4"]),
        ("trains", ["0-5@1"], None),  # one spoke per player: the centre is full
    ],
)
def test_spokes_differ_between_presets(
    h: Any, preset: str, after_two: list[str], after_four: list[str] | None
) -> None:
    state = h.deal(Rules.preset(preset), SPOKE_HANDS)
    apply_move(state, Move.parse("9-0@0"))
    apply_move(state, Move.parse("9-4@0"))
    assert h.keys(legal_moves(state)) == after_two
    if after_four is not None:
        apply_move(state, Move.parse("9-1@0"))
        apply_move(state, Move.parse("9-5@0"))
        assert h.keys(legal_moves(state)) == after_four


@pytest.mark.parametrize(
    ("preset", "first", "after_draw"),
    [
        ("standard", ["draw"], ["8-9@0"]),
        ("maltese", ["draw"], ["8-9@0", "pass"]),
        ("trains", ["pass"], None),  # two tiles left = the two-player reserve
    ],
)
def test_drawing_differs_between_presets(
    h: Any, preset: str, first: list[str], after_draw: list[str] | None
) -> None:
    state = h.deal(Rules.preset(preset), ["0-2", ""], boneyard="9-8 0-1", rest=1)
    assert state.boneyard_size == 2
    assert h.keys(legal_moves(state)) == first
    if after_draw is not None:
        apply_move(state, Move.parse("draw"))
        assert state.drawn_tile == Tile(8, 9)
        assert h.keys(legal_moves(state)) == after_draw
