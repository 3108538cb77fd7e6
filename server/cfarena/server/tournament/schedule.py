"""Round-robin schedules for a multiplayer game, with duplicate seat rotations.

With N bots and tables of k seats, every k-combination of bots forms a table
(when N < k there is one table and bots fill several seats, cyclically). Each
table plays every cyclic seat rotation with the same deal seed, so each bot gets
each seat's hands (duplicate play: luck cancels); `games` repeats that with new
seeds. Pure functions: the same inputs always give the same schedule and keys.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
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


def derive_seed(tournament_seed: int, game: int) -> int:
    """The deal seed of game `game`: shared by every table and rotation (duplicate)."""
    digest = hashlib.sha256(f"cfarena/tournament/{tournament_seed}/{game}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed 64-bit column


def tables(bots: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """Every table of `players` seats: k-combinations, or one cyclic table if too few bots."""
    if len(bots) < 2:
        raise ValueError("a tournament needs at least two bots")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    if len(bots) >= players:
        return list(itertools.combinations(bots, players))
    return [tuple(bots[i % len(bots)] for i in range(players))]


def round_robin(
    bots: Sequence[str], players: int, games: int, seed: int
) -> list[PlannedMatch]:
    """The whole schedule, game by game (so an early stop leaves every table evenly played)."""
    if games < 1:
        raise ValueError("games must be at least 1")
    plan: list[PlannedMatch] = []
    all_tables = tables(bots, players)
    for game in range(games):
        deal_seed = derive_seed(seed, game)
        for t, table in enumerate(all_tables):
            for rotation in range(players):
                seats = tuple(table[(s + rotation) % players] for s in range(players))
                plan.append(
                    PlannedMatch(f"t{t}-g{game}-r{rotation}", deal_seed, seats, t, game, rotation)
                )
    return plan


def seats_needed(plan: Sequence[PlannedMatch]) -> dict[str, int]:
    """How many seats each bot holds at most in one match (bot processes to start)."""
    need: dict[str, int] = {}
    for match in plan:
        for name in set(match.seats):
            need[name] = max(need.get(name, 0), match.seats.count(name))
    return need
