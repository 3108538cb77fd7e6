"""MatchState's own constructors (`new`, `from_position`): the only code that sets its internals.

`views.determinize` samples hidden facts and hands them to `from_position`;
given the true facts instead, `from_position` must rebuild the very state.
And no engine module but MatchState's own (state.py and the modules of its
layers: state_fields.py, legality.py, rounds.py) writes a MatchState's
private fields; the fields are declared in one class, `StateFields`.
"""

from __future__ import annotations

import ast
import inspect
import random
from pathlib import Path

import pytest

from cfarena.engine import PRESETS, MatchState, apply_move, legal_moves, new_match, observe
from cfarena.engine.state import NO_TILE
from cfarena.engine.state_fields import StateFields
from cfarena.engine.tile_codes import code_of

ENGINE = Path(__file__).resolve().parents[2] / "client_sdk" / "cfarena" / "engine"


def _rebuilt(state: MatchState) -> MatchState:
    """`state` rebuilt by `from_position` from its full facts (public accessors only)."""
    seat = state.current_seat
    drawn = state.drawn_tile
    return MatchState.from_position(
        state.rules,
        state.deal_seed,
        round_index=state.round_index,
        round_outcomes=state.round_outcomes,
        event_offset=state.event_count,
        hands=[[code_of(t) for t in state.hand(s)] for s in range(state.players)],
        boneyard=[code_of(t) for t in state.boneyard()],
        layout=state.layout(),
        pending=state.pending,
        current_seat=seat,
        has_drawn=state.has_drawn,
        drawn=code_of(drawn) if drawn is not None else NO_TILE,
    )


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 4])
def test_from_position_with_the_true_facts_is_the_same_state(preset: str, players: int) -> None:
    state = new_match(PRESETS[preset], players, seed=11 * players)
    rng = random.Random(players)
    step = 0
    while not state.is_over:
        if step % 5 == 0 or state.has_drawn:
            copy = _rebuilt(state)
            assert copy.seed is None and copy.events == [] and copy.deals == []
            assert copy.event_count == state.event_count
            for seat in range(players):
                assert observe(copy, seat) == observe(state, seat)
            assert copy.boneyard() == state.boneyard()
            assert copy.drawn_tile == state.drawn_tile
            # both play on identically (same draws, same later deals) to the end
            play = random.Random(step)
            original = state.clone()
            while not original.is_over:
                moves = legal_moves(original)
                assert legal_moves(copy) == moves
                move = moves[play.randrange(len(moves))]
                assert apply_move(copy, move) == apply_move(original, move)
            assert copy.outcome == original.outcome
        moves = legal_moves(state)
        apply_move(state, moves[rng.randrange(len(moves))])
        step += 1


def test_new_deals_the_first_round_from_the_seed() -> None:
    rules = PRESETS["standard"].resolve(3)
    a, b = MatchState.new(rules, 5), MatchState.new(rules, 5)
    assert a.seed == a.deal_seed == 5
    assert a.deals == b.deals and len(a.deals) == 1
    assert [a.hand(s) for s in range(3)] == [b.hand(s) for s in range(3)]
    assert MatchState.new(rules, 6).deals != a.deals


def _state_modules() -> set[str]:
    """The file names of MatchState's own modules: those of the classes it is made of."""
    return {
        Path(inspect.getfile(cls)).name for cls in MatchState.__mro__ if cls is not object
    }


def test_the_state_is_made_of_the_named_layers() -> None:
    # a new layer is a deliberate change: add it here and to state_fields' docstring
    assert _state_modules() == {"state.py", "state_fields.py", "legality.py", "rounds.py"}


def test_one_class_declares_the_states_fields() -> None:
    """A new field is added in `StateFields` only: every other layer has empty slots."""
    declaring = [cls for cls in MatchState.__mro__ if cls.__dict__.get("__slots__")]
    assert declaring == [StateFields]
    for cls in MatchState.__mro__[:-1]:
        assert cls.__dict__.get("__slots__") is not None, f"{cls.__name__} has no __slots__"
    assert not hasattr(MatchState.new(PRESETS["standard"].resolve(2), 1), "__dict__")


def test_clone_copies_every_field() -> None:
    state = MatchState.new(PRESETS["standard"].resolve(2), 1)
    copy = state.clone()
    assert type(copy) is MatchState
    for name in StateFields.__slots__:
        assert getattr(copy, name) == getattr(state, name), name


def test_only_the_states_own_modules_write_or_call_its_private_members() -> None:
    own = _state_modules()
    offenders = []
    for path in sorted(ENGINE.glob("*.py")):
        if path.name in own:
            continue
        tree = ast.parse(path.read_text())
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and (isinstance(node.ctx, ast.Store | ast.Del) or id(node) in called)
            ):
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert offenders == []
