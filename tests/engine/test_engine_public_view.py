"""RULES.md §6 for a spectator: `public_view` and `public_events` show what every seat
may see (the layout, hand sizes, boneyard count, scores, public events) and no tile
of any hand or of the boneyard; a draw says who drew, not what."""

from __future__ import annotations

import random

import pytest

from cfarena.engine import (
    EventKind,
    MatchState,
    Rules,
    apply_move,
    legal_moves,
    new_match,
    observe,
    public_events,
    public_view,
    visible_events,
)

CASES = [  # (preset, players, seed, rounds)
    ("standard", 2, 1, "single"),
    ("standard", 4, 7, "single"),
    ("standard", 4, 11, None),
    ("standard", 6, 3, "single"),
]


def _play(preset: str, players: int, seed: int, rounds: str | None) -> list[MatchState]:
    """A match played with random legal moves; the state after every move is checked
    on the way (the list holds the one state object, for the final checks)."""
    rules = Rules.preset(preset)
    if rounds is not None:
        rules = rules.with_options(rounds=rounds)
    state = new_match(rules, players=players, seed=seed)
    rng = random.Random(seed)
    steps = 0
    while not state.is_over:
        _check(state)
        apply_move(state, rng.choice(legal_moves(state)))
        steps += 1
    _check(state)
    assert steps > 10
    return [state]


def _check(state: MatchState) -> None:
    view = public_view(state)
    hidden = {t for s in range(state.players) for t in state.hand(s)} | set(state.boneyard())
    shown = {p.tile for p in view.layout} | {view.round_double}
    assert not shown & hidden, "a hidden tile is in the public view"
    assert view.hand_sizes == tuple(state.hand_size(s) for s in range(state.players))
    assert view.boneyard_size == state.boneyard_size
    assert view.over == state.is_over
    for seat in range(state.players):  # exactly the public part of every seat's view
        obs = observe(state, seat)
        assert (view.layout, view.pending, view.hand_sizes, view.boneyard_size,
                view.round_scores, view.totals, view.event_count, view.round_index) == (
            obs.layout, obs.pending, obs.hand_sizes, obs.boneyard_size, obs.round_scores,
            obs.totals, obs.event_count, obs.round_index)
    # nothing that says who is deciding now (a seat deciding on a drawn tile that
    # fits, under play_drawn="may", is what the events hide)
    assert not {"current_seat", "current_has_drawn"} & set(type(view).__dataclass_fields__)


@pytest.mark.parametrize(("preset", "players", "seed", "rounds"), CASES)
def test_public_view_shows_no_hidden_tile(preset: str, players: int, seed: int,
                                          rounds: str | None) -> None:
    (state,) = _play(preset, players, seed, rounds)
    events = public_events(state)
    assert len(events) == len(state.events)
    draws = [e for e in events if e.kind is EventKind.DRAW]
    assert draws, "the match had no draw: the case tests nothing"
    assert all(e.tile is None and e.seat is not None for e in draws)
    for seat in range(players):
        # every event but a draw is what each seat saw; a draw is each seat's view of
        # somebody else's draw
        seen = visible_events(state, seat)
        for mine, theirs in zip(events, seen, strict=True):
            if mine.kind is EventKind.DRAW:
                assert theirs.seat == mine.seat
            else:
                assert mine == theirs


@pytest.mark.parametrize("start", [0, 5, 40])
def test_public_events_from_an_offset(start: int) -> None:
    (state,) = _play("standard", 4, 7, "single")
    assert public_events(state, start) == public_events(state)[start:]
