"""tournament.schedule: tables, seat rotations, duplicate deal seeds and the phases that
keep a bot's views of a deal apart (pure functions)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import pytest

from cfarena.engine import PRESETS, new_match
from cfarena.server.tournament.schedule import (
    PlannedMatch,
    derive_seed,
    most_seats,
    phases,
    round_robin,
    seats_needed,
    tables,
)

BOTS = ("ann", "bob", "cat", "dan")


def _groups(plan: list[PlannedMatch]) -> dict[tuple[int, int], list[PlannedMatch]]:
    """The matches of each (table, game): the rotations of one duplicate deal."""
    out: dict[tuple[int, int], list[PlannedMatch]] = defaultdict(list)
    for match in plan:
        out[match.table, match.game].append(match)
    return out


@pytest.mark.parametrize(("bots", "players", "games"), [
    (BOTS, 3, 2), (BOTS, 2, 3), (BOTS, 4, 1), (BOTS[:3], 3, 2),
])
def test_every_bot_sits_in_every_seat_of_its_table_once_per_game(
    bots: tuple[str, ...], players: int, games: int
) -> None:
    plan = round_robin(bots, players, games, seed=5)
    n_tables = len(list(itertools.combinations(bots, players)))
    assert len(plan) == n_tables * games * players
    groups = _groups(plan)
    assert len(groups) == n_tables * games
    for (t, _game), matches in groups.items():
        table = tables(bots, players)[t]
        assert sorted(m.rotation for m in matches) == list(range(players))
        # rotation r seats the table turned by r: seat s holds table[(s + r) % players]
        for m in matches:
            assert m.seats == tuple(table[(s + m.rotation) % players] for s in range(players))
        # so each of the table's bots holds each seat exactly once (never the same seating)
        for seat in range(players):
            assert Counter(m.seats[seat] for m in matches) == Counter(table)
        assert len({m.seats for m in matches}) == players


def test_the_rotations_of_a_deal_share_its_seed_and_tables_and_games_differ() -> None:
    plan = round_robin(BOTS, 3, 3, seed=42)
    by_deal: dict[tuple[int, int], set[int]] = defaultdict(set)
    for match in plan:
        by_deal[match.table, match.game].add(match.seed)
    # one seed for the rotations of a table's game (duplicate play) ...
    assert all(len(seeds) == 1 for seeds in by_deal.values())
    assert all(seeds == {derive_seed(42, g, t)} for (t, g), seeds in by_deal.items())
    # ... and a new one for each table and game, and for another tournament seed
    assert len({next(iter(s)) for s in by_deal.values()}) == 4 * 3
    assert derive_seed(42, 0, 0) != derive_seed(43, 0, 0)
    assert all(0 <= m.seed < 2**63 for m in plan)  # fits a signed 64-bit column


def _views(plan: list[PlannedMatch], phase_of: dict[str, int]
           ) -> dict[tuple[int, int, str], set[tuple[int, ...]]]:
    """(phase, deal, bot) -> the seats the bot holds in that deal in that phase."""
    seen: dict[tuple[int, int, str], set[tuple[int, ...]]] = defaultdict(set)
    for m in plan:
        for bot in set(m.seats):
            seen[phase_of[m.key], m.seed, bot].add(
                tuple(s for s, b in enumerate(m.seats) if b == bot))
    return seen


@pytest.mark.parametrize(("bots", "players"), [
    (BOTS, 2), (BOTS, 3), (BOTS, 4), (("a", "b", "c", "d", "e", "f"), 4), (("a", "b"), 4),
])
def test_phases_give_a_bot_one_view_of_a_deal_and_are_the_rotations(
        bots: tuple[str, ...], players: int) -> None:
    plan = round_robin(bots, players, 2, seed=7)
    phase_of = phases((m.key, m.seed, m.seats) for m in plan)
    assert set(phase_of) == {m.key for m in plan}
    assert all(len(views) == 1 for views in _views(plan, phase_of).values())
    # one deal per table and game: the phases are the rotations (a cyclic table of
    # two bots repeats its views every two rotations)
    assert all(phase_of[m.key] == m.rotation % len(set(m.seats)) if len(bots) < players
               else phase_of[m.key] == m.rotation for m in plan)
    # the same plan, the same phases (resume, workers on other machines)
    assert phases((m.key, m.seed, m.seats) for m in reversed(plan)) == phase_of


def test_phases_separate_the_views_of_a_deal_shared_by_tables() -> None:
    # tournaments scheduled before deals were per table: every table of a game played
    # one deal, and B holds seat 1 of it against A but seat 0 against C, in rotation 0
    plan = [PlannedMatch(m.key, derive_seed(1, m.game, 0), m.seats, m.table, m.game,
                         m.rotation) for m in round_robin(("A", "B", "C"), 2, 2, seed=1)]
    phase_of = phases((m.key, m.seed, m.seats) for m in plan)
    assert all(len(views) == 1 for views in _views(plan, phase_of).values())
    assert len(set(phase_of.values())) == 3  # more than the rotations, but few


def test_most_seats_one_bot_holds() -> None:
    assert most_seats(4, 4) == 1 and most_seats(6, 4) == 1
    assert most_seats(3, 4) == 2 and most_seats(2, 4) == 2 and most_seats(2, 5) == 3


def test_every_bot_is_dealt_every_seats_hand_of_a_duplicate_deal() -> None:
    # the point of rotating with one seed: across a table's rotations each bot plays
    # each seat's hand of the same deal
    rules = PRESETS["standard"]
    plan = round_robin(BOTS[:3], 3, 1, seed=9)
    [matches] = _groups(plan).values()
    hands = [new_match(rules, 3, m.seed).hand for m in matches]
    dealt: dict[str, set[tuple[object, ...]]] = defaultdict(set)
    for m, hand in zip(matches, hands, strict=True):
        for seat, bot in enumerate(m.seats):
            dealt[bot].add(hand(seat))
    first = new_match(rules, 3, matches[0].seed)
    every_hand = {first.hand(seat) for seat in range(3)}
    assert len(every_hand) == 3
    assert dealt == {bot: every_hand for bot in BOTS[:3]}


def test_keys_are_unique_and_stable_and_the_plan_goes_game_by_game() -> None:
    plan = round_robin(BOTS, 3, 2, seed=1)
    assert plan == round_robin(BOTS, 3, 2, seed=1)
    assert len({m.key for m in plan}) == len(plan)
    assert all(m.key == f"t{m.table}-g{m.game}-r{m.rotation}" for m in plan)
    games = [m.game for m in plan]
    assert games == sorted(games)  # an early stop leaves every table evenly played


def test_fewer_bots_than_seats_fill_a_table_cyclically() -> None:
    assert tables(["a", "b"], 4) == [("a", "b", "a", "b")]
    plan = round_robin(["a", "b"], 4, 1, seed=3)
    assert [m.seats for m in plan] == [
        ("a", "b", "a", "b"), ("b", "a", "b", "a"), ("a", "b", "a", "b"), ("b", "a", "b", "a"),
    ]
    assert seats_needed(m.seats for m in plan) == {"a": 2, "b": 2}
    assert seats_needed(m.seats for m in round_robin(BOTS, 3, 1, seed=3)) == \
        dict.fromkeys(BOTS, 1)


@pytest.mark.parametrize(("bots", "players", "games", "message"), [
    (["solo"], 2, 1, "at least two bots"),
    (["a", "a", "b"], 2, 1, "distinct"),
    (["a", "b"], 2, 0, "games must be at least 1"),
])
def test_impossible_schedules_are_refused(
    bots: list[str], players: int, games: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        round_robin(bots, players, games, seed=0)
