"""RULES.md §1 (pieces), §7 (presets, refused combinations) and from_deal validation."""

from __future__ import annotations

from typing import Any

import pytest

from cfarena.engine import (
    MatchState,
    ResolvedRules,
    Rules,
    RulesError,
    Tile,
    full_set,
    new_match,
)


@pytest.mark.parametrize(("n", "count"), [(6, 28), (9, 55), (12, 91), (15, 136), (18, 190)])
def test_set_sizes(n: int, count: int) -> None:
    tiles = full_set(n)
    assert len(tiles) == count
    assert len(set(tiles)) == count
    assert all(0 <= t.a <= t.b <= n for t in tiles)


def test_pips_and_doubles() -> None:
    assert Tile.parse("9-4").pips == 13
    assert Tile.parse("4-4").is_double
    assert not Tile.parse("4-9").is_double
    assert Tile.parse("0-0").pips == 0


@pytest.mark.parametrize(
    ("preset", "players", "set_size", "hand", "spokes", "reserve"),
    [
        ("standard", 2, 9, 20, 6, 0),
        ("standard", 4, 9, 11, 6, 0),
        ("standard", 6, 9, 7, 6, 0),
        ("standard", 7, 12, 10, 6, 0),
        ("standard", 8, 12, 9, 6, 0),
        ("maltese", 7, 9, 7, 4, 0),
        ("maltese", 8, 12, 7, 4, 0),
        ("trains", 2, 9, 21, 2, 2),
        ("trains", 5, 9, 8, 5, 1),
        ("trains", 8, 9, 5, 8, 1),
    ],
)
def test_presets_resolve_per_table(
    preset: str, players: int, set_size: int, hand: int, spokes: int, reserve: int
) -> None:
    r = Rules.preset(preset).resolve(players)
    assert (r.set_size, r.hand_size, r.spokes, r.boneyard_reserve) == (
        set_size,
        hand,
        spokes,
        reserve,
    )
    state = new_match(r, players, seed=3)
    assert all(len(state.deals[0].hands[s]) == hand for s in range(players))


@pytest.mark.parametrize(
    ("options", "players", "option"),
    [
        ({"hand_size": 14}, 4, "hand_size"),  # 56 > 54 dealable
        ({"hand_size": 0}, 4, "hand_size"),
        ({"spokes": 10}, 4, "spokes"),  # outside 1..9
        ({"spokes": 0}, 4, "spokes"),
        ({"toes": 0}, 4, "toes"),
        ({"toes": 9}, 4, "toes"),  # a double off the centre meets at most 8 tiles of its number
        ({"boneyard_reserve": 11}, 4, "boneyard_reserve"),  # 54 - 44 = 10 left after the deal
        ({"double_blank": 7}, 4, "double_blank"),  # 0, 25 or 50
        ({"set_size": 2}, 4, "set_size"),
        ({"set_size": 19}, 4, "set_size"),
        ({"set_size": 12}, 4, "hand_size"),  # no table entry for (12, 4)
        ({"rounds": 11}, 4, "rounds"),
        ({"rounds": "most"}, 4, "rounds"),
        ({"boneyard_reserve": -1}, 4, "boneyard_reserve"),
        ({"double_blank": -5}, 4, "double_blank"),
        ({"end_at_score": -1}, 4, "end_at_score"),
        ({}, 9, "players"),
        ({}, 1, "players"),
    ],
)
def test_impossible_rules_are_refused_naming_the_option(
    options: dict[str, object], players: int, option: str
) -> None:
    with pytest.raises(RulesError) as err:
        rules = Rules.preset("standard").with_options(**options)
        new_match(rules, players, seed=1)
    assert err.value.option == option
    assert option in str(err.value)


def test_trains_allows_at_most_eight_trains() -> None:
    """RULES.md §7: "maximaal acht" (seed 002); standard's centre takes up to N spokes."""
    with pytest.raises(RulesError) as err:
        Rules.preset("trains").with_options(spokes=9).resolve(4)
    assert err.value.option == "spokes" and "at most 8" in str(err.value)
    assert Rules.preset("trains").with_options(spokes=8).resolve(4).spokes == 8
    assert Rules.preset("standard").with_options(spokes=9).resolve(4).spokes == 9
    assert Rules.preset("standard").with_options(toes=8, boneyard_reserve=10).resolve(4).toes == 8


def test_unknown_option_and_bad_enum_value_are_refused() -> None:
    with pytest.raises(RulesError) as err:
        Rules.preset("standard").with_options(colour="red")
    assert err.value.option == "colour"
    with pytest.raises(RulesError) as err:
        Rules.preset("standard").with_options(start="random")
    assert err.value.option == "start"


def test_holder_start_may_deal_the_whole_set_but_others_may_not() -> None:
    # 55 tiles: holder deals all 55, the other start modes keep the double out
    holder = Rules.preset("maltese").with_options(hand_size=11)
    assert new_match(holder, 5, seed=1).boneyard_size >= 0
    with pytest.raises(RulesError, match="hand_size"):
        new_match(holder.with_options(start="centre_first"), 5, seed=1)


def test_hand_built_resolved_rules_are_checked() -> None:
    good = Rules.preset("standard").resolve(4)
    fields = good.to_dict()
    fields.update(spokes=12, start=good.start, draw=good.draw, play_drawn=good.play_drawn,
                  tie_break=good.tie_break)
    bad = ResolvedRules(**fields)
    with pytest.raises(RulesError) as err:
        new_match(bad, 4, seed=0)
    assert err.value.option == "spokes"
    with pytest.raises(RulesError) as err:
        new_match(good, 3, seed=0)
    assert err.value.option == "players"


def _rest(exclude: set[Tile]) -> list[Tile]:
    return [t for t in full_set(4) if t not in exclude]


@pytest.mark.parametrize(
    ("hands", "boneyard", "message"),
    [
        ([["0-5"], ["0-1"]], None, "0-5 is not a tile of the double-4 set"),
        ([["0-1", "0-1"], ["0-2"]], None, "0-1 appears more than once"),
        ([["4-4"], ["0-2"]], None, "4-4 is the round double"),
        ([["0-1"], ["0-2"]], ["0-3"], "tiles missing from the deal"),
        ([["0-1"], ["0-2"]], ["0-1"], "boneyard: 0-1 appears more than once"),
    ],
)
def test_from_deal_validates_the_tiles(
    hands: list[list[str]], boneyard: list[str] | None, message: str
) -> None:
    rules = Rules.preset("standard").with_options(set_size=4, hand_size=1, spokes=2)
    hand_tiles = [[Tile.parse(t) for t in h] for h in hands]
    if boneyard is None:
        named = {t for h in hand_tiles for t in h if t in full_set(4)} | {Tile(4, 4)}
        bone = _rest(named)
    else:
        bone = [Tile.parse(t) for t in boneyard]
    with pytest.raises(ValueError, match=message):
        MatchState.from_deal(rules, 2, hand_tiles, bone, first_seat=0)


def test_from_deal_validates_seats() -> None:
    rules = Rules.preset("standard").with_options(set_size=4, hand_size=1, spokes=2)
    bone = _rest({Tile(4, 4)})
    with pytest.raises(ValueError, match="first_seat"):
        MatchState.from_deal(rules, 2, [[], []], bone, first_seat=2)
    with pytest.raises(ValueError, match="hands"):
        MatchState.from_deal(rules, 2, [[]], bone, first_seat=0)


def test_from_deal_places_the_round_double_of_its_round(h: Any) -> None:
    state = h.deal(h.small_rules(rounds="full"), ["0-4", "1-4"], round_index=2)
    # round 2 of a double-4 set uses 2-2
    assert state.round_double == Tile(2, 2)
    assert state.seed is None
    assert state.layout()[0].tile == Tile(2, 2)
    assert state.current_seat == 0
    assert state.boneyard()[0] == Tile(0, 0)
