"""The arena's online rating: Weng-Lin Bayesian ranking with the Plackett-Luce
model (the `openskill` library, >= 6.2, whose tie handling is right: ranks tie in
Chicken Foot).

Every (bot, version) has a skill estimate N(mu, sigma^2), starting at openskill's
N(25, 8.33^2). After each finished match every seat's estimate moves by the
match's ranks (rank 1 best, equal ranks tie, forfeited seats rank last), in
the transaction that stores the match. What the standings show:

- the **conservative score** `mu - K_SIGMA * sigma` (K_SIGMA = 3): the skill the
  bot has with ~99.9% confidence; a new bot starts at 0 and climbs as it plays;
- the same on an **Elo-like scale**, `1500 + ELO_PER_MU * (mu - 3 sigma)`: with
  settled ratings Plackett-Luce gives P(i ahead of j) = logistic((mu_i - mu_j) / c),
  c = sqrt(2) beta, and Elo gives logistic((R_i - R_j) ln 10 / 400), so one mu
  point is 400 / (c ln 10) ~ 29.5 Elo points; a new bot shows 1500.

The ladder ranks by the conservative score. The batch Bradley-Terry fit
(`rating/bradley_terry.py`) stays as the order-independent check (see docs/RATINGS.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

MODEL = PlackettLuce()
K_SIGMA = 3.0
INITIAL_MU: float = MODEL.mu
INITIAL_SIGMA: float = MODEL.sigma
ELO_BASE = 1500.0
ELO_PER_MU = 400.0 / (math.sqrt(2.0) * MODEL.beta * math.log(10.0))


@dataclass(frozen=True, slots=True)
class Skill:
    """One (bot, version)'s rating: mean, uncertainty, finished matches rated."""

    mu: float = INITIAL_MU
    sigma: float = INITIAL_SIGMA
    games: int = 0

    @property
    def conservative(self) -> float:
        """mu - K_SIGMA * sigma: what the ladder ranks by."""
        return self.mu - K_SIGMA * self.sigma

    @property
    def elo(self) -> float:
        """The conservative score on an Elo-like scale (a new bot: 1500)."""
        return ELO_BASE + ELO_PER_MU * self.conservative


def rate_match(skills: Sequence[Skill], ranks: Sequence[int]) -> list[Skill]:
    """The skills of a match's seats after it, given their ranks (1 = best, equal
    ranks tie). One seat per entry; each seat is its own team.

    Ties: openskill 6.2's PlackettLuce still mis-rates some (with a tie at the top
    of 4 seats, ranks 1 1 2 3, the third seat gets the winners' update; openskill.py
    issues #155 and #201). So a tie is rated as the average of strict orders: the
    seats of each tied group rotated through the group's places, every rotation
    equally often; tied seats then move alike, and never past a better rank.
    """
    if len(skills) != len(ranks) or len(skills) < 2:
        raise ValueError(f"need one rank per seat and at least 2 seats, got "
                         f"{len(skills)} skills and {len(ranks)} ranks")
    groups: dict[int, list[int]] = {}
    for seat, rank in enumerate(ranks):
        groups.setdefault(rank, []).append(seat)
    ordered = [groups[r] for r in sorted(groups)]
    rounds = math.lcm(*(len(g) for g in ordered))
    mu = [0.0] * len(skills)
    sigma = [0.0] * len(skills)
    for shift in range(rounds):
        strict = [0] * len(skills)
        place = 1
        for group in ordered:
            for i in range(len(group)):
                strict[group[(i + shift) % len(group)]] = place + i
            place += len(group)
        teams = [[MODEL.rating(mu=s.mu, sigma=s.sigma)] for s in skills]
        rated = MODEL.rate(teams, ranks=[float(r) for r in strict])
        for seat, team in enumerate(rated):
            mu[seat] += team[0].mu / rounds
            sigma[seat] += team[0].sigma / rounds
    return [Skill(m, sd, skill.games + 1) for m, sd, skill in zip(mu, sigma, skills, strict=True)]


def rate_entrants(before: dict[tuple[int, str], Skill],
                  seats: Sequence[tuple[tuple[int, str], int]]) -> dict[tuple[int, str], Skill]:
    """New skills of the entrants (bot id, version) of one match from `seats`, one
    (entrant, rank) per seat. An entrant holding several seats (a tournament's
    self-play) is rated from each seat's update averaged, and counts one game."""
    updated = rate_match([before[e] for e, _ in seats], [r for _, r in seats])
    by_entrant: dict[tuple[int, str], list[Skill]] = {}
    for (entrant, _rank), skill in zip(seats, updated, strict=True):
        by_entrant.setdefault(entrant, []).append(skill)
    return {
        e: Skill(sum(s.mu for s in got) / len(got), sum(s.sigma for s in got) / len(got),
                 before[e].games + 1)
        for e, got in by_entrant.items()
    }
