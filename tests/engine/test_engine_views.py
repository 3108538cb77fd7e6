"""RULES.md §6 (hidden information): observe, visible_events, determinize, render, clone."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cfarena.engine import (
    DRAW,
    PRESETS,
    MatchState,
    Move,
    Rules,
    Tile,
    apply_move,
    determinize,
    full_set,
    legal_moves,
    new_match,
    observe,
    render,
    visible_events,
)


def _hidden_permutation(
    state: MatchState, seat: int, rng: random.Random | None, keep_boneyard: bool = False
) -> MatchState:
    """The same round with the tiles hidden from `seat` (other hands, and the
    boneyard unless `keep_boneyard`) reshuffled by `rng`, sizes kept; or the
    deal replayed unchanged through from_deal if rng is None."""
    deal = state.deals[-1]
    hidden = [t for s, hand in enumerate(deal.hands) if s != seat for t in hand]
    if not keep_boneyard:
        hidden += deal.boneyard
    if rng is not None:
        rng.shuffle(hidden)
    hands: list[list[Tile]] = []
    pos = 0
    for s, hand in enumerate(deal.hands):
        if s == seat:
            hands.append(list(hand))
        else:
            hands.append(hidden[pos : pos + len(hand)])
            pos += len(hand)
    boneyard = list(deal.boneyard) if keep_boneyard else hidden[pos:]
    return MatchState.from_deal(
        state.rules, state.players, hands, boneyard, deal.first_seat, deal.round_index
    )


def _compare_views(preset: str, players: int, seed: int, seat: int, keep_boneyard: bool) -> int:
    """Play the same public moves in two deals differing only in what `seat`
    cannot see; its views must stay equal. Returns how many moves were compared."""
    rules = Rules.preset(preset).with_options(rounds="single", start="centre_first")
    base = new_match(rules, players, seed)
    rng = random.Random(seed)
    a = _hidden_permutation(base, seat, None)  # the real deal, replayed through from_deal
    b = _hidden_permutation(base, seat, rng, keep_boneyard)
    steps = 0
    while not a.is_over and not b.is_over:
        assert observe(a, seat) == observe(b, seat)
        assert visible_events(a, seat) == visible_events(b, seat)
        assert render(a, seat) == render(b, seat)
        if not keep_boneyard and a.current_seat == seat and legal_moves(a) == (DRAW,):
            break  # seat would see the drawn tile, which depends on the boneyard order
        common = [m for m in legal_moves(a) if m in legal_moves(b)]
        if not common:
            break  # the hidden difference forces different public moves
        move = common[rng.randrange(len(common))]
        apply_move(a, move)
        apply_move(b, move)
        steps += 1
    return steps


@settings(max_examples=80, deadline=None)
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    players=st.integers(2, 8),
    seed=st.integers(0, 10**9),
    seat=st.integers(0, 7),
    keep_boneyard=st.booleans(),
)
def test_hidden_information_never_changes_a_seats_view(
    preset: str, players: int, seed: int, seat: int, keep_boneyard: bool
) -> None:
    _compare_views(preset, players, seed, seat % players, keep_boneyard)


@pytest.mark.parametrize("keep_boneyard", [True, False])
def test_hidden_information_comparison_covers_real_play(keep_boneyard: bool) -> None:
    # the property above is not vacuous: the two deals share many moves
    steps = [_compare_views("standard", 2, seed, 0, keep_boneyard) for seed in range(30)]
    assert sum(steps) > 60
    assert sum(1 for s in steps if s > 0) > 20


def test_observation_holds_only_own_and_public_tiles() -> None:
    rules = Rules.preset("maltese").with_options(rounds=2)
    state = new_match(rules, 4, seed=9)
    rng = random.Random(9)
    while not state.is_over:
        for seat in range(4):
            obs = observe(state, seat)
            known = set(obs.hand) | {p.tile for p in obs.layout}
            assert set(obs.hand) == set(state.hand(seat))
            assert obs.hand_sizes == tuple(len(state.hand(s)) for s in range(4))
            assert obs.drawable == max(0, state.boneyard_size - rules.resolve(4).boneyard_reserve)
            if obs.drawn_tile is not None:
                assert obs.drawn_tile in obs.hand
            for move in obs.legal_moves:
                assert move.tile is None or move.tile in known
            assert (obs.legal_moves != ()) == (state.current_seat == seat)
            for event in visible_events(state, seat):
                if event.kind.value == "draw" and event.seat != seat:
                    assert event.tile is None
        moves = legal_moves(state)
        apply_move(state, moves[rng.randrange(len(moves))])


def _states_to_sample(preset: str, players: int, seed: int) -> list[MatchState]:
    """Snapshots (clones) of a random match, one every few moves."""
    rules = Rules.preset(preset).with_options(rounds=2, play_drawn="may")
    state = new_match(rules, players, seed)
    rng = random.Random(seed)
    snapshots = []
    count = 0
    while not state.is_over:
        if count % 7 == 0 or state.has_drawn:
            snapshots.append(state.clone())
        moves = legal_moves(state)
        apply_move(state, moves[rng.randrange(len(moves))])
        count += 1
    return snapshots


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 5])
def test_determinize_is_consistent_with_the_observation(preset: str, players: int) -> None:
    rng = random.Random(4)
    for state in _states_to_sample(preset, players, seed=players):
        for seat in range(players):
            obs = observe(state, seat)
            sample = determinize(obs, rng)
            assert sample.seed is None
            assert observe(sample, seat) == obs
            assert sample.hand(seat) == state.hand(seat)
            assert Counter(sample.tiles_in_play()) == Counter(full_set(state.rules.set_size))
            if seat == state.current_seat:
                assert legal_moves(sample) == legal_moves(state)
            # playable to the end of the round
            sample.halt_at_round_end = True
            rounds_before = len(sample.round_outcomes)
            while not sample.round_over:
                moves = legal_moves(sample)
                apply_move(sample, moves[rng.randrange(len(moves))])
            assert len(sample.round_outcomes) == rounds_before + 1


def test_determinize_differs_between_samples_but_keeps_own_hand() -> None:
    state = new_match(Rules.preset("standard"), 4, seed=1)
    obs = observe(state, 2)
    rng = random.Random(0)
    samples = [determinize(obs, rng) for _ in range(5)]
    assert len({s.hand(0) for s in samples}) > 1
    assert all(s.hand(2) == state.hand(2) for s in samples)


def test_clone_is_independent() -> None:
    state = new_match(Rules.preset("standard"), 4, seed=3)
    copy = state.clone()
    apply_move(copy, legal_moves(copy)[0])
    assert len(copy.events) == len(state.events) + 1
    assert copy.layout() != state.layout()
    assert sum(len(copy.hand(s)) for s in range(4)) == sum(len(state.hand(s)) for s in range(4)) - 1
    # and the original still plays the same
    assert legal_moves(state) == legal_moves(state.clone())


def test_render(h: Any) -> None:
    state = h.deal(Rules.preset("standard"), ["9-2 9-7 3-8", "9-3 4-4 5-8", "9-4 4-5 1-8",
                                              "9-1 9-6 0-4 2-8"], boneyard="6-8 4-6", first=3)
    for key in ("9-1@0", "9-2@0", "9-3@0", "9-4@0", "9-6@0", "9-7@0", "4-4@4", "4-5@7"):
        apply_move(state, Move.parse(key))
    text = render(state)
    lines = text.splitlines()
    assert "round double 9-9" in lines[0] and "seat 3 to move" in lines[0]
    assert lines[1] == "#0 9-9 [centre, 6/6 spokes]"
    assert "  #4 9-4 -> #7 4-4* [pending, 1/3 toes]" in lines
    assert "      #8 4-5 (open 5)" in lines
    assert "  #1 9-1 (open 1)" in lines
    assert "seat 0: 3-8" in text and "seat 1: 5-8" in text
    mine = render(state, seat=1)
    assert "seat 1: 5-8" in mine and "3-8" not in mine and "seat 0: 1 tiles" in mine
    assert render(observe(state, 1)) == mine
    assert "boneyard: " in text
