"""Tournaments: round-robin schedules with duplicate seat rotations, and their runner."""

from __future__ import annotations

from cfarena.server.tournament.config import BotSpec, TournamentConfig, TournamentError
from cfarena.server.tournament.runner import TournamentRun, run_tournament
from cfarena.server.tournament.schedule import PlannedMatch, round_robin, seats_needed

__all__ = [
    "BotSpec",
    "PlannedMatch",
    "TournamentConfig",
    "TournamentError",
    "TournamentRun",
    "round_robin",
    "run_tournament",
    "seats_needed",
]
