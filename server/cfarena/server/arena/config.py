"""Everything `cfarena serve` is configured with, in one value (the CLI builds it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfarena.engine import Rules
from cfarena.match.record import TimeControl
from cfarena.server.arena.ladder import LadderPolicy
from cfarena.server.storage import default_pool


@dataclass(frozen=True)
class ArenaConfig:
    rules: Rules
    players: int = 4
    time_control: TimeControl = field(default_factory=TimeControl)
    host: str = "127.0.0.1"
    port: int = 50051
    concurrency: int = 4  # matches at once
    # fixes table picks and deals: tests and demos only, never competitions
    seed: int | None = None
    max_matches: int | None = None  # stop after this many were started and are over
    # how often the database is asked for revoked/rotated tokens and ratings
    poll_s: float = 1.0
    # several arenas on one database: one not heard of (its heartbeat is every poll)
    # for this long is dead, and its unfinished matches are marked aborted
    stale_s: float = 10.0
    ladder: LadderPolicy = field(default_factory=LadderPolicy)
    # extra keyword arguments for RefereeServer (TLS, keepalive, ...: the operations'
    # options go here without touching the arena)
    referee_options: Mapping[str, Any] = field(default_factory=dict)
    unsaved_dir: Path | None = None  # where unsaved records go (default: the cwd)
    # when it stops, how long the records not stored yet may wait for the database
    flush_s: float = 10.0

    @property
    def pool(self) -> str:
        """The rating pool of serve's matches: "<preset>/<players>p"."""
        return default_pool(self.rules.to_options(), self.players)
