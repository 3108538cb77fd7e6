"""Round-robin schedules for a multiplayer game, with duplicate seat rotations.

With N bots and tables of k seats, every k-combination of bots forms a table
(when N < k there is one table and bots fill several seats, cyclically: the
organiser's `--fill`). A gauntlet of bot NEW keeps only the tables with NEW (the
field never plays itself), with their round-robin numbers and deals. Each table
plays every cyclic seat rotation with the same deal seed (a deal of its own), so
each bot gets each seat's hands (duplicate play: luck cancels); `games` repeats
that with new seeds. Pure functions: the same inputs always give the same
schedule and keys.

A deal is played in several views: which hand each bot holds. Matches are grouped
in *phases* (`phases`) so that within one phase each bot holds one view of each deal;
between phases every bot process is stopped and the host's caches dropped, so no
process of a bot learns another view of a deal it plays (docs/FAIRPLAY.md "Host state").
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PlannedMatch:
    """One match of a schedule: a stable key, its deal seed and who sits where."""

    key: str  # "t<table>-g<game>-r<rotation>", stable across runs
    seed: int
    seats: tuple[str, ...]  # bot name by seat
    table: int
    game: int
    rotation: int


def derive_seed(tournament_seed: int, game: int, table: int) -> int:
    """The deal seed of game `game` at table `table`: shared by the table's rotations
    (duplicate). Each table has deals of its own: a deal played at two tables would
    give a bot two views of it in one rotation (its seats there differ), which no
    scheduling could keep apart without many more phases (see `phases`)."""
    digest = hashlib.sha256(
        f"cfarena/tournament/{tournament_seed}/{game}/table-{table}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed 64-bit column


def tables(bots: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """Every table of `players` seats: k-combinations, or one cyclic table if too few bots."""
    if len(bots) < 2:
        raise ValueError("a tournament needs at least two bots")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    if len(bots) >= players:
        return list(itertools.combinations(bots, players))
    return [filled_table(bots, players)]


def filled_table(bots: Sequence[str], players: int) -> tuple[str, ...]:
    """The one table of fewer bots than seats: the bots in order, again from the first
    until every seat is taken (A B C A)."""
    return tuple(bots[i % len(bots)] for i in range(players))


def round_robin(
    bots: Sequence[str], players: int, games: int, seed: int, gauntlet: str | None = None
) -> list[PlannedMatch]:
    """The whole schedule, game by game (so an early stop leaves every table evenly
    played); with `gauntlet`, only the tables where that bot sits."""
    if games < 1:
        raise ValueError("games must be at least 1")
    if gauntlet is not None and gauntlet not in bots:
        raise ValueError(f"the gauntlet's bot {gauntlet!r} is not one of the bots")
    plan: list[PlannedMatch] = []
    played = [(t, table) for t, table in enumerate(tables(bots, players))
              if gauntlet is None or gauntlet in table]
    for game in range(games):
        for t, table in played:
            deal_seed = derive_seed(seed, game, t)
            for rotation in range(players):
                seats = tuple(table[(s + rotation) % players] for s in range(players))
                plan.append(
                    PlannedMatch(f"t{t}-g{game}-r{rotation}", deal_seed, seats, t, game, rotation)
                )
    return plan


def seats_needed(seatings: Iterable[Sequence[str]]) -> dict[str, int]:
    """How many seats each bot holds at most in one match of `seatings` (bot by seat,
    one per match): the bot processes to start per match."""
    need: dict[str, int] = {}
    for seats in seatings:
        for name in set(seats):
            need[name] = max(need.get(name, 0), seats.count(name))
    return need


def most_seats(bots: int, players: int) -> int:
    """The most seats one bot holds at one table (more than 1 only with fewer bots
    than seats: the table is filled cyclically)."""
    return 1 if bots >= players else -(-players // bots)


def key_order(key: str) -> tuple[int, int, int]:
    """(rotation, table, game) of a key "t<table>-g<game>-r<rotation>" ((0, 0, 0) if
    the key has another form)."""
    parts = dict((p[:1], p[1:]) for p in key.split("-") if p[:1] in "tgr")
    try:
        return int(parts["r"]), int(parts["t"]), int(parts["g"])
    except (KeyError, ValueError):
        return 0, 0, 0


def phases(matches: Iterable[tuple[str, int, Sequence[Hashable]]]) -> dict[str, int]:
    """The phase of each match, given as (key, deal seed, bot by seat): matches of one
    phase never give one bot two different views of a deal (the seats it holds in
    it), and there are few phases.

    Rotation by rotation, each match goes into the first phase where each of its bots
    holds the seats it holds there already in that deal (or none). One deal per table
    and game (`derive_seed`) makes the phases exactly the rotations; tournaments
    scheduled when every table shared a game's deal (a bot holds seat 1 of a deal
    against A and seat 0 of it against C) need more. Deterministic."""
    views: list[dict[tuple[int, Hashable], tuple[int, ...]]] = []  # (deal, bot) -> seats
    found: dict[str, int] = {}
    for key, seed, seats in sorted(matches, key=lambda m: key_order(m[0])):
        held = {(seed, bot): tuple(s for s, b in enumerate(seats) if b == bot)
                for bot in set(seats)}
        phase = next((p for p, seen in enumerate(views)
                      if all(seen.get(view, held_seats) == held_seats
                             for view, held_seats in held.items())), len(views))
        if phase == len(views):
            views.append({})
        views[phase].update(held)
        found[key] = phase
    return found


def group_key(group: int, seating: int) -> str:
    """The key of a bot test's match: deal group `group` in seating `seating`."""
    return f"g{group}-s{seating}"


def group_of_key(key: str) -> tuple[int, int]:
    """(group, seating) of a bot test's key "g<group>-s<seating>" (ValueError if not one)."""
    group, _, seating = key.partition("-")
    if not (group[:1] == "g" and seating[:1] == "s"):
        raise ValueError(f"not a bot test's match key: {key!r}")
    return int(group[1:]), int(seating[1:])


def group_phase(group: int, seating: int, groups_per_batch: int, matches_per_group: int) -> int:
    """The phase of a bot test's match: its deal groups are played `groups_per_batch` at
    once (a batch, scheduled whole), seating by seating. One phase holds one seating of
    each deal of one batch (one view of each deal for each bot), and the phases of a
    later batch all come after those of an earlier one: whatever the moment a batch is
    scheduled, a process never meets a deal it held another view of."""
    return (group // groups_per_batch) * matches_per_group + seating


def group_phases(keys: Iterable[str], groups_per_batch: int, matches_per_group: int
                 ) -> dict[str, int]:
    """`group_phase` of each of a bot test's match keys."""
    return {key: group_phase(*group_of_key(key), groups_per_batch, matches_per_group)
            for key in keys}
