"""The ladder's matchmaking, table by table (pure: no sockets, no clock)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from cfarena.server.arena.ladder import Entrant, LadderPolicy, pick_table, seat_table


def names(table: list[Entrant] | None) -> list[str] | None:
    return None if table is None else [f"{e.bot}{':' + e.version if e.version else ''}"
                                       for e in table]


def E(bot: str, **kw: object) -> Entrant:
    return Entrant(bot=bot, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("entrants", "players", "expected"), [
    # too few bots with free capacity
    ([E("a"), E("b")], 3, None),
    ([E("a"), E("b", free=0), E("c")], 3, None),
    # two versions of one bot are one bot: never at one table
    ([E("a", version="1"), E("a", version="2")], 2, None),
])
def test_no_table(entrants: list[Entrant], players: int, expected: None) -> None:
    assert pick_table(entrants, players, random.Random(1)) is expected


@pytest.mark.parametrize(("entrants", "first_pick", "why"), [
    ([E("a", games=5), E("b", games=2), E("c", games=9)], "b", "fewest games"),
    ([E("a", games=2, sigma=3.0), E("b", games=2, sigma=6.0), E("c", games=2, sigma=1.0)],
     "b", "equal games: the most uncertain rating"),
    ([E("a", games=0), E("b", games=50, waiting_s=31.0), E("c", games=0)], "b",
     "waiting past starve_after_s beats fewest games"),
    ([E("a", games=1, waiting_s=40.0), E("b", games=0, waiting_s=90.0), E("c", games=0)],
     "b", "of two starving, the longest wait"),
    ([E("a", games=0, free=0), E("b", games=7), E("c", games=8), E("d", games=9)], "b",
     "a busy bot (no free capacity) is not considered"),
])
def test_the_anchor_is_who_needs_a_match_most(entrants: list[Entrant], first_pick: str,
                                              why: str) -> None:
    for seed in range(20):  # whatever the tie-breaks, the anchor always plays
        table = pick_table(entrants, 2, random.Random(seed))
        assert table is not None and first_pick in [e.bot for e in table], why


@pytest.mark.parametrize(("entrants", "opponent", "why"), [
    ([E("anchor", games=0, mu=25.0), E("far", games=1, mu=45.0), E("near", games=1, mu=27.0)],
     "near", "similar strength"),
    ([E("anchor", games=0, mu=25.0), E("far", games=1, mu=5.0), E("near", games=1, mu=22.0)],
     "near", "similar strength, from below"),
    ([E("anchor", games=0, mu=25.0), E("busy", games=20, mu=25.0), E("other", games=1, mu=31.0)],
     "other", "a bot far ahead in games yields to a weaker match-up"),
    ([E("anchor", games=0, mu=25.0), E("near", games=1, mu=25.0),
      E("starved", games=30, mu=60.0, waiting_s=100.0)],
     "starved", "a starving bot is taken whatever its strength"),
    ([E("anchor", games=0), E("anchor", version="2", games=0), E("x", games=3)],
     "x", "never a second version of the anchor"),
])
def test_opponents(entrants: list[Entrant], opponent: str, why: str) -> None:
    for seed in range(20):
        table = pick_table(entrants, 2, random.Random(seed))
        assert table is not None
        assert sorted(e.bot for e in table) == sorted(["anchor", opponent]), why


def test_a_table_of_four_gathers_similar_strengths() -> None:
    entrants = [E("anchor", games=0, mu=30.0, sigma=2.0)] + [
        E(f"b{mu}", games=3, mu=float(mu), sigma=2.0) for mu in (5, 10, 28, 29, 31, 45)]
    table = pick_table(entrants, 4, random.Random(3))
    assert sorted(names(table) or []) == ["anchor", "b28", "b29", "b31"]


@pytest.mark.parametrize(("table", "expected"), [
    # one bot has always sat in seat 0: it moves to seat 1
    ([E("a", seats=(5, 0)), E("b", seats=(0, 0))], ["b", "a"]),
    ([E("a", seats=(0, 3)), E("b", seats=(3, 0))], ["a", "b"]),
    ([E("a", seats=(3, 0)), E("b", seats=(0, 3))], ["b", "a"]),
    # three seats: each where it sat least
    ([E("a", seats=(0, 2, 2)), E("b", seats=(2, 2, 0)), E("c", seats=(2, 0, 2))],
     ["a", "c", "b"]),
])
def test_seats_balance(table: list[Entrant], expected: list[str]) -> None:
    for seed in range(10):
        assert names(seat_table(table, random.Random(seed))) == expected


def test_big_tables_are_seated_greedily_and_completely() -> None:
    table = [E(f"b{i}", seats=tuple(1 if p == i else 0 for p in range(8))) for i in range(8)]
    seated = seat_table(table, random.Random(0))
    assert sorted(names(seated) or []) == sorted(e.bot for e in table)
    # nobody sits where it sat before
    assert all(e.seat_count(p) == 0 for p, e in enumerate(seated))


def _simulate(strengths: dict[str, float], players: int, rounds: int, capacity: int,
              seed: int) -> dict[str, Entrant]:
    """Play `rounds` picks: matches end at random times; every bot always connected."""
    rng = random.Random(seed)
    state = {b: E(b, free=capacity, mu=25.0) for b in strengths}
    now = 0.0
    last: dict[str, float] = dict.fromkeys(strengths, 0.0)
    running: list[tuple[float, list[str]]] = []
    for _ in range(rounds):
        live = [replace(e, waiting_s=now - last[e.bot]) for e in state.values()]
        table = pick_table(live, players, rng, LadderPolicy(starve_after_s=30.0))
        if table is None:  # wait for the next match to end
            running.sort()
            end, bots = running.pop(0)
            now = end
            for b in bots:
                state[b] = replace(state[b], free=state[b].free + 1)
            continue
        for seat, e in enumerate(table):
            counts = list(state[e.bot].seats) + [0] * (players - len(state[e.bot].seats))
            counts[seat] += 1
            # strength shows in the ratings as games accumulate
            mu = state[e.bot].mu + (strengths[e.bot] - state[e.bot].mu) * 0.1
            state[e.bot] = replace(state[e.bot], free=state[e.bot].free - 1,
                                   games=state[e.bot].games + 1, seats=tuple(counts),
                                   mu=mu, sigma=max(1.0, state[e.bot].sigma * 0.97))
            last[e.bot] = now
        running.append((now + rng.uniform(1.0, 10.0), [e.bot for e in table]))
    return state


@pytest.mark.parametrize(("players", "capacity"), [(2, 1), (3, 2), (4, 1)])
def test_no_bot_gets_half_again_the_games_of_another_and_seats_even_out(
        players: int, capacity: int) -> None:
    strengths = {"random": 10.0, "greedy": 22.0, "smart": 28.0, "mc": 34.0, "x1": 25.0,
                 "x2": 18.0, "x3": 30.0}
    state = _simulate(strengths, players, 3000, capacity, seed=players)
    games = [e.games for e in state.values()]
    assert min(games) > 100
    # the issue asks for 1.5x; the ladder keeps them within a few games (a random
    # pick would spread them by dozens)
    assert max(games) - min(games) <= 4, games
    for e in state.values():  # each seat position within 3 matches of the bot's mean
        mean = e.games / players
        assert all(abs(n - mean) <= 3 for n in e.seats), (e.bot, e.seats)
