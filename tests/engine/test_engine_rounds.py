"""RULES.md §4 (starting a round) and §5 (ending a round, scoring, match end, ties)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from cfarena.engine import (
    EventKind,
    MatchEnd,
    Move,
    RoundEnd,
    Rules,
    TieBreak,
    Tile,
    apply_move,
    full_set,
    legal_moves,
    new_match,
    rank_seats,
)


def _round_events(state: object, kind: EventKind, round_index: int) -> list:  # type: ignore[type-arg]
    return [e for e in state.events if e.kind is kind and e.round_index == round_index]  # type: ignore[attr-defined]


# ------------------------------------------------------------------ start modes
@pytest.mark.parametrize("players", [2, 3, 5])
def test_centre_first(players: int, h: Any) -> None:
    rules = Rules.preset("standard").with_options(rounds="half")
    state = new_match(rules, players, seed=11)
    h.random_playout(state, random.Random(1))
    for deal in state.deals:
        r = deal.round_index
        double = Tile(9 - r, 9 - r)
        assert deal.round_double == double
        assert deal.first_seat == r % players
        assert deal.centre_seat is None and not deal.draw_off
        assert all(double not in hand for hand in deal.hands)
        counted = Counter(t for hand in deal.hands for t in hand) + Counter(deal.boneyard)
        assert counted + Counter([double]) == Counter(full_set(9))
        start = _round_events(state, EventKind.ROUND_START, r)[0]
        assert (start.seat, start.tile) == (r % players, double)
        centre = _round_events(state, EventKind.CENTRE, r)[0]
        assert (centre.seat, centre.tile, centre.node) == (None, double, 0)


def test_holder_places_the_double_and_the_next_seat_moves() -> None:
    rules = Rules.preset("maltese")
    found = 0
    for seed in range(40):
        state = new_match(rules, 6, seed)  # 42 of 55 tiles dealt: usually held
        deal = state.deals[0]
        holders = [s for s, hand in enumerate(deal.hands) if Tile(9, 9) in hand]
        if not holders:
            continue
        found += 1
        holder = holders[0]
        assert deal.centre_seat == holder and not deal.setup_draws
        assert state.current_seat == (holder + 1) % 6
        assert Tile(9, 9) not in state.hand(holder)
        assert len(state.hand(holder)) == 6
        centre = _round_events(state, EventKind.CENTRE, 0)[0]
        assert (centre.seat, centre.tile) == (holder, Tile(9, 9))
    assert found > 10


def test_holder_when_nobody_holds_the_double_seats_draw_in_turn() -> None:
    rules = Rules.preset("maltese").with_options(rounds=3)
    found = 0
    for seed in range(60):
        state = new_match(rules, 3, seed)  # 21 of 55 tiles dealt
        while not state.is_over:  # look at every round of the match
            r = state.round_index
            deal = state.deals[r]
            double = deal.round_double
            if all(double not in hand for hand in deal.hands):
                found += 1
                draws = deal.setup_draws
                position = deal.boneyard.index(double)
                assert [t for _, t in draws] == list(deal.boneyard[: position + 1])
                assert [s for s, _ in draws] == [(r + i) % 3 for i in range(position + 1)]
                placer = draws[-1][0]
                assert deal.centre_seat == placer
                assert deal.first_seat == (placer + 1) % 3
                # drawn tiles stay in the hands (only while no move has been made)
                if len(state.events) and state.events[-1].kind is EventKind.CENTRE:
                    for seat, tile in draws[:-1]:
                        assert tile in state.hand(seat)
                    assert state.boneyard_size == len(deal.boneyard) - len(draws)
                    assert state.current_seat == (placer + 1) % 3
                events = _round_events(state, EventKind.DRAW, r)[: len(draws)]
                assert [(e.seat, e.tile) for e in events] == list(draws)
            moves = legal_moves(state)
            apply_move(state, moves[seed % len(moves)])
            while not state.is_over and state.round_index == r:
                apply_move(state, legal_moves(state)[0])
    assert found > 20


@pytest.mark.parametrize("players", [2, 4, 8])
def test_draw_off(players: int) -> None:
    rules = Rules.preset("trains").with_options(rounds=4)
    state = new_match(rules, players, seed=5)
    rng = random.Random(5)
    while not state.is_over:
        r = state.round_index
        deal = state.deals[r]
        double = deal.round_double
        draws = deal.draw_off
        assert draws[-1][1] == double
        assert len({t for _, t in draws}) == len(draws)
        assert [s for s, _ in draws] == [(r + i) % players for i in range(len(draws))]
        assert deal.centre_seat == deal.first_seat == draws[-1][0]
        assert all(len(hand) == rules.resolve(players).hand_size for hand in deal.hands)
        assert all(double not in hand for hand in deal.hands)
        events = _round_events(state, EventKind.DRAW_OFF, r)
        assert [(e.seat, e.tile) for e in events] == list(draws)
        # draw-off draws are public
        assert all(e.seen_by((e.seat or 0) + 1) == e for e in events)
        while not state.is_over and state.round_index == r:
            moves = legal_moves(state)
            apply_move(state, moves[rng.randrange(len(moves))])


# ------------------------------------------------------------ ending a round
def test_going_out_ends_the_round_at_once(h: Any) -> None:
    state = h.deal(h.small_rules(double_blank=25), ["1-4", "0-4 0-0 2-3"])
    apply_move(state, Move.parse("1-4@0"))
    assert state.is_over and state.current_seat is None
    (outcome,) = state.round_outcomes
    assert outcome.reason is RoundEnd.WENT_OUT and outcome.went_out == 0
    assert outcome.scores == (0, 4 + 25 + 5)
    assert legal_moves(state) == ()


@pytest.mark.parametrize(("reserve", "blocked"), [(4, True), (3, False)])
def test_blocked_when_nobody_can_play_and_the_boneyard_is_at_the_reserve(
    h: Any, reserve: int, blocked: bool
) -> None:
    rules = h.small_rules(spokes=1, boneyard_reserve=reserve)
    hands = ["0-4 1-2", "1-1 1-3 1-4 2-2 2-3 2-4 3-3 3-4"]
    state = h.deal(rules, hands, boneyard="0-0 0-1 0-2 0-3")
    apply_move(state, Move.parse("0-4@0"))
    if blocked:
        (outcome,) = state.round_outcomes
        assert outcome.reason is RoundEnd.BLOCKED and outcome.went_out is None
        assert outcome.scores == (3, 2 + 4 + 5 + 4 + 5 + 6 + 6 + 7)
        assert state.events[-1].kind is EventKind.ROUND_END
    else:
        assert h.keys(legal_moves(state)) == ["draw"]
        apply_move(state, Move.parse("draw"))
        assert h.keys(legal_moves(state)) == ["0-0@1"]


def test_a_round_blocked_from_the_start_ends_at_once(h: Any) -> None:
    # every tile with a 4 is in a reserve-protected boneyard
    rules = h.small_rules(boneyard_reserve=4)
    hands = ["0-0 0-1 0-2 0-3 1-1 1-2", "1-3 2-2 2-3 3-3"]
    state = h.deal(rules, hands, boneyard="0-4 1-4 2-4 3-4")
    assert state.is_over
    assert state.round_outcomes[0].reason is RoundEnd.BLOCKED
    assert state.round_outcomes[0].scores == (50 + 1 + 2 + 3 + 2 + 3, 4 + 4 + 5 + 6)


@pytest.mark.parametrize("double_blank", [0, 25, 50])
def test_double_blank_score(h: Any, double_blank: int) -> None:
    state = h.deal(h.small_rules(double_blank=double_blank), ["1-4", "0-0 2-3"])
    apply_move(state, Move.parse("1-4@0"))
    assert state.round_outcomes[0].scores == (0, double_blank + 5)


# ------------------------------------------------------------------- rounds
@pytest.mark.parametrize(
    ("preset", "players", "rounds", "expected"),
    [
        ("standard", 4, "full", 10),
        ("standard", 4, "half", 5),
        ("standard", 4, "single", 1),
        ("standard", 4, 3, 3),
        ("standard", 7, "full", 13),
        ("standard", 7, "half", 7),
        ("maltese", 3, "full", 10),
    ],
)
def test_number_of_rounds(
    h: Any, preset: str, players: int, rounds: str | int, expected: int
) -> None:
    rules = Rules.preset(preset).with_options(rounds=rounds)
    state = new_match(rules, players, seed=2)
    h.random_playout(state, random.Random(2))
    assert len(state.round_outcomes) == expected
    n = rules.resolve(players).set_size
    assert [d.round_double for d in state.deals] == [Tile(n - i, n - i) for i in range(expected)]
    assert state.outcome is not None and state.outcome.reason is MatchEnd.ROUNDS_PLAYED
    totals = tuple(sum(r.scores[s] for r in state.round_outcomes) for s in range(players))
    assert state.outcome.totals == totals


@pytest.mark.parametrize("limit", [0, 60, 250])
def test_end_at_score(h: Any, limit: int) -> None:
    rules = h.small_rules(end_at_score=limit, hand_size=3, rounds="single")
    for seed in range(5):
        state = new_match(rules, 3, seed)
        h.random_playout(state, random.Random(seed))
        assert state.outcome is not None and state.outcome.reason is MatchEnd.SCORE_LIMIT
        totals = [0, 0, 0]
        for i, outcome in enumerate(state.round_outcomes):
            totals = [t + s for t, s in zip(totals, outcome.scores, strict=True)]
            last = i == len(state.round_outcomes) - 1
            assert (max(totals) > limit) == last
        # `rounds` is ignored; doubles cycle 4-4 ... 0-0, 4-4 ...
        assert [d.round_double.a for d in state.deals] == [
            4 - i % 5 for i in range(len(state.deals))
        ]
        assert state.outcome.ranks[totals.index(max(totals))] == 3


@pytest.mark.parametrize("tie_break", ["shared", "zero_rounds"])
def test_equal_totals_share_the_rank(h: Any, tie_break: str) -> None:
    rules = h.small_rules(spokes=1, boneyard_reserve=4, tie_break=tie_break)
    hands = ["0-4 3-4 2-4 1-4 1-2", "1-1 1-3 2-2 2-3 3-3"]
    state = h.deal(rules, hands, boneyard="0-0 0-1 0-2 0-3")
    apply_move(state, Move.parse("0-4@0"))  # blocked: 21 pips each
    assert state.outcome is not None
    assert state.outcome.totals == (21, 21)
    assert state.outcome.ranks == (1, 1)
    assert state.outcome.winners == (0, 1)


@pytest.mark.parametrize(
    ("rounds", "tie_break", "ranks"),
    [
        # equal totals 20: seat 0 has a zero round
        ([(0, 10), (20, 10)], TieBreak.ZERO_ROUNDS, (1, 2)),
        ([(0, 10), (20, 10)], TieBreak.SHARED, (1, 1)),
        # equal totals and zero rounds: the lower lowest non-zero round wins
        ([(0, 0), (5, 15), (15, 5), (10, 10)], TieBreak.ZERO_ROUNDS, (1, 1)),
        ([(0, 0, 9), (3, 12, 6), (27, 18, 5)], TieBreak.ZERO_ROUNDS, (2, 3, 1)),
        ([(0, 5), (10, 0), (0, 10)], TieBreak.ZERO_ROUNDS, (1, 2)),
    ],
)
def test_rank_seats_tie_breaks(
    rounds: list[tuple[int, ...]], tie_break: TieBreak, ranks: tuple[int, ...]
) -> None:
    assert rank_seats(rounds, tie_break) == ranks


def test_outcome_ranks_follow_the_tie_break(h: Any) -> None:
    for preset in ("maltese", "standard"):
        rules = Rules.preset(preset).with_options(rounds=2)
        for seed in range(30):
            state = new_match(rules, 3, seed)
            h.random_playout(state, random.Random(seed))
            assert state.outcome is not None
            scores = [r.scores for r in state.round_outcomes]
            assert state.outcome.ranks == rank_seats(scores, rules.tie_break)
            assert state.outcome.rounds == tuple(state.round_outcomes)
