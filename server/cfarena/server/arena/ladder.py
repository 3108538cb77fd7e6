"""Matchmaking for the competition ladder: which connected bots play next, in which
seats. Pure and synchronous (no sockets, no clock but the numbers it is given), so
its policy is tested table by table (tests/arena/test_ladder.py).

An entrant is one version of one bot with at least one connection. A table is
formed like this:

1. Only entrants with free capacity are considered (a slow bot, busy in its
   matches, holds up nobody), and at most one version of a bot sits at a table
   (two versions of one bot have one owner).
2. The **anchor** is the entrant that needs a match most: one waiting longer than
   `starve_after_s` first (the longest wait first: no one starves), else the one
   with the fewest games, then the most uncertain rating (largest sigma), then the
   longest wait.
3. The other seats go one by one to the entrant with the lowest cost: games above
   the fewest among the candidates, plus the distance of its mu from the table's
   mean mu in units of its uncertainty `sqrt(sigma^2 + beta^2)` (similar strength
   first, but a bot far ahead in games yields to others). A starving entrant costs
   nothing.
4. Seats: the assignment of entrants to seat positions that puts each where it
   has sat least (fewest matches in that position, summed over the table), so
   every bot spends about as many games in each seat.

Ties are broken by the `random.Random` given (the arena's CSPRNG).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from cfarena.server.rating.online import INITIAL_MU, INITIAL_SIGMA, MODEL

BETA: float = MODEL.beta
BRUTE_FORCE_SEATS = 6  # up to this many players, every seating is tried (6! = 720)


@dataclass(frozen=True, slots=True)
class Entrant:
    """One (bot, version) with a connection. `free`: matches it can still take now;
    `games`: matches it played or plays (any outcome but aborted); `seats[p]`: how
    many of them in seat position p; `waiting_s`: seconds since its last match
    started (or since it connected)."""

    bot: str
    version: str = ""
    free: int = 1
    games: int = 0
    mu: float = INITIAL_MU
    sigma: float = INITIAL_SIGMA
    seats: tuple[int, ...] = ()
    waiting_s: float = 0.0

    @property
    def key(self) -> tuple[str, str]:
        return (self.bot, self.version)

    def seat_count(self, position: int) -> int:
        return self.seats[position] if position < len(self.seats) else 0


@dataclass(frozen=True, slots=True)
class LadderPolicy:
    starve_after_s: float = 30.0  # waiting longer than this: picked first
    games_weight: float = 1.0  # cost of one game above the fewest
    strength_weight: float = 1.0  # cost of one uncertainty unit of mu distance


def pick_table(entrants: Sequence[Entrant], players: int, rng: random.Random,
               policy: LadderPolicy = LadderPolicy()) -> list[Entrant] | None:
    """The next table (entrants in seat order), or None if fewer than `players`
    distinct bots have free capacity."""
    ready = [e for e in entrants if e.free > 0]
    if players < 1 or len({e.bot for e in ready}) < players:
        return None
    jitter = {e.key: rng.random() for e in ready}

    def starving(e: Entrant) -> bool:
        return e.waiting_s > policy.starve_after_s

    anchor = min(ready, key=lambda e: (
        (0, -e.waiting_s) if starving(e) else (1, 0.0), e.games, -e.sigma, -e.waiting_s,
        jitter[e.key]))
    table = [anchor]
    fewest = min(e.games for e in ready)
    while len(table) < players:
        seated = {e.bot for e in table}
        mean_mu = sum(e.mu for e in table) / len(table)

        def cost(e: Entrant, mean_mu: float = mean_mu) -> tuple[float, float, float]:
            if starving(e):
                return (-e.waiting_s, 0.0, jitter[e.key])
            distance = abs(e.mu - mean_mu) / math.sqrt(e.sigma ** 2 + BETA ** 2)
            value = policy.games_weight * (e.games - fewest) + policy.strength_weight * distance
            return (0.0, value, jitter[e.key])

        table.append(min((e for e in ready if e.bot not in seated), key=cost))
    return seat_table(table, rng)


def seat_table(table: Sequence[Entrant], rng: random.Random) -> list[Entrant]:
    """`table` in the seat order where each sits where it has sat least."""
    n = len(table)
    if n <= BRUTE_FORCE_SEATS:
        orders = list(itertools.permutations(range(n)))
        rng.shuffle(orders)  # among equally good seatings, any one
        best = min(orders, key=lambda order: _seating_cost(table, order))
        return [table[i] for i in best]
    # greedy for bigger tables: the (entrant, position) pair sat least in, first
    free_positions = set(range(n))
    placed: dict[int, Entrant] = {}
    left = list(table)
    rng.shuffle(left)
    while left:
        entrant, position = min(
            ((e, p) for e in left for p in sorted(free_positions)),
            key=lambda ep: ep[0].seat_count(ep[1]) - min(ep[0].seat_count(q) for q in range(n)))
        placed[position] = entrant
        free_positions.discard(position)
        left.remove(entrant)
    return [placed[p] for p in range(n)]


def _seating_cost(table: Sequence[Entrant], order: Sequence[int]) -> tuple[int, int]:
    """(the matches the entrants already played in their positions, summed; the most
    of them for one entrant) of the seating where position p holds table[order[p]]."""
    counts = [table[i].seat_count(p) for p, i in enumerate(order)]
    return (sum(counts), max(counts))
