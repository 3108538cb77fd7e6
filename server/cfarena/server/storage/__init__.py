"""Persistent storage of bots, tournaments, matches, game logs, seat logs and ratings.

`open_database(url)` opens (and migrates) a SQLite file or a PostgreSQL
database and returns the `Database` facade; see docs/STORAGE.md.
"""

from __future__ import annotations

from cfarena.server.credentials import hash_token
from cfarena.server.storage.bot_store import BotNameTaken, Registration
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.database import Database, open_database
from cfarena.server.storage.encoding import canonical_json, canonical_sha256, config_hash
from cfarena.server.storage.match_recording import LeaseLost
from cfarena.server.storage.queries import GLOBAL_POOL
from cfarena.server.storage.scheduling import default_pool
from cfarena.server.storage.values import (
    BotInfo,
    FaultInfo,
    FaultKind,
    MatchDetail,
    MatchInfo,
    MatchPlan,
    MatchStatus,
    RatingPoint,
    ScheduledMatch,
    SeatInfo,
    SeatLog,
    SkillStanding,
    Standing,
    StoredMatch,
    TournamentInfo,
    TournamentStatus,
)

__all__ = [
    "GLOBAL_POOL",
    "BotInfo",
    "BotNameTaken",
    "Database",
    "FaultInfo",
    "FaultKind",
    "LeaseLost",
    "MatchDetail",
    "MatchInfo",
    "MatchPlan",
    "MatchStatus",
    "RatingPoint",
    "Registration",
    "ScheduledMatch",
    "SeatInfo",
    "SeatLog",
    "SkillStanding",
    "Standing",
    "StorageError",
    "StoredMatch",
    "TournamentInfo",
    "TournamentStatus",
    "canonical_json",
    "canonical_sha256",
    "config_hash",
    "default_pool",
    "hash_token",
    "open_database",
]
