"""Deal groups: the unit of evidence of `cfarena sprt`, and the score of one.

A deal group is one deal played at one table in every seating of `seatings`:
NEW at seat 0, OLD opposite it (seat players // 2), field bots in the other
seats, every cyclic rotation of that, and every rotation of its mirror (NEW and
OLD swapped), each seating once. Hands are dealt by seat index (duplicate play),
so over a group NEW and OLD each hold every hand and every seat against the
same field: the luck of the deal cancels in their difference. The mirror makes
the group symmetric: when NEW and OLD are the same bot, the group's score is
distributed symmetrically about 1/2 whatever the field and the seats' order of
play (cyclic rotations alone would always seat NEW just before OLD at three
players, a bias of its own). Two players: 2 matches; an even table with one
field bot repeated: `players` matches (the mirror is a rotation); else
2 * `players`. The matches of one group are correlated (one deal): the test
counts the group, never the match, as one observation; this is fastchess's and
fishtest's game pair (one opening, both colours) for more than two players.

The score of a group is a head-to-head result: the mean over its matches of
1/2 + (result(NEW) - result(OLD)) / 2. A seat's result is by default its
points (`point_results`): minus its points per round over `POINT_SCALE`, so
that a match scores 1/2 + (OLD's points - NEW's points) / (70 * rounds): 1/2
when both hold as many points, 0.6 when NEW holds 7 fewer in one round. The
scale makes a group's point score spread over [0, 1] about as its placement
score does (measured on deal groups of their own seeds: smart vs greedy and
montecarlo vs a quarter of it), which matters because the test's prior on
the spread is put at 0 and 1 (`llr`); a match's score leaves [0, 1] when the
difference passes 35 points a round (a group's mean seldom does), and the
test then widens that range to the scores seen.
Points and not placement, because within a deal group points carry about
three times the evidence per match: a point difference is additive, so the
hands' strength cancels in it over the group's rotations, where placement, a
step function of the points, keeps much of it (benchmarks/sprt.py, smart vs
greedy: a squared t-value per match of 0.49 for points, 0.16 for placement;
docs/TESTING_BOTS.md). Blow-ups
(the 0-0 counts 50) are rarer than feared: a single round's difference
exceeded 90 points in 0.1% of 6,000 matches. The placement result
(`placement`: (players - rank) / (players - 1), 1 for first, 0 for last;
shared ranks share it) is kept as a choice (`match_results.ScoreKind`): it is
what ranks bots everywhere else. `luck.adjusted_results` gives point results
with the same expectation and less noise; their group score is computed by
the same `group_score`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def seatings(new: str, old: str, field: Sequence[str], players: int) -> tuple[tuple[str, ...], ...]:
    """The seatings of one deal group (bot name by seat), in play order.

    `field` fills the seats that are neither NEW's nor OLD's, in order and
    cyclically; it may be empty only at two-player tables."""
    if new == old:
        raise ValueError("NEW and OLD must have different names")
    if players < 2:
        raise ValueError(f"a table needs at least 2 players, got {players}")
    if players > 2 and not field:
        raise ValueError(f"a table of {players} needs field bots for its other seats")
    if new in field or old in field:
        raise ValueError("a field bot must not be NEW or OLD")
    opposite = players // 2
    fillers = iter(field[i % len(field)] for i in range(players))
    base = [new if s == 0 else old if s == opposite else next(fillers) for s in range(players)]
    mirror = [old if b == new else new if b == old else b for b in base]
    found: list[tuple[str, ...]] = []
    for arrangement in (base, mirror):
        for r in range(players):
            seating = tuple(arrangement[(s - r) % players] for s in range(players))
            if seating not in found:
                found.append(seating)
    return tuple(found)


def placement(ranks: Sequence[int]) -> tuple[float, ...]:
    """Each seat's placement result from competition ranks (1 best): 1 for first,
    0 for last, (players - rank) / (players - 1) between."""
    players = len(ranks)
    if players < 2:
        raise ValueError("placement needs at least two seats")
    return tuple((players - r) / (players - 1) for r in ranks)


POINT_SCALE = 35.0  # points per round that make a result of 1 (a head-to-head step of 1/2)


def point_results(totals: Sequence[float], rounds: int) -> tuple[float, ...]:
    """Each seat's points result: -total / (POINT_SCALE * rounds), `rounds` the rounds
    played (fewer points are better; only differences between seats count)."""
    if rounds < 1:
        raise ValueError(f"a points result needs at least one round played, got {rounds}")
    return tuple(-t / (POINT_SCALE * rounds) for t in totals)


@dataclass(frozen=True, slots=True)
class SeatedResults:
    """One match of a group: the bot in each seat and each seat's result."""

    seats: tuple[str, ...]
    results: tuple[float, ...]


def head_to_head(match: SeatedResults, new: str, old: str) -> float:
    """1/2 + (NEW's result - OLD's result) / 2 in one match (each holds one seat)."""
    if match.seats.count(new) != 1 or match.seats.count(old) != 1:
        raise ValueError(f"NEW ({new}) and OLD ({old}) must hold one seat each: {match.seats}")
    return 0.5 + (match.results[match.seats.index(new)]
                  - match.results[match.seats.index(old)]) / 2.0


def group_score(matches: Sequence[SeatedResults], new: str, old: str) -> float:
    """The score of a deal group: the mean head-to-head result over its matches."""
    if not matches:
        raise ValueError("a deal group has at least one match")
    return sum(head_to_head(m, new, old) for m in matches) / len(matches)
