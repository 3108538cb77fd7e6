"""What defines a tournament: its bots, rules, table size, games, seed and time control."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import Rules
from cfarena.server.referee import TimeControl
from cfarena.server.sandbox import SandboxLimits
from cfarena.server.tournament.pool import Launch


class TournamentError(Exception):
    """A tournament that cannot start or go on (a bot that does not start, ...)."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """A participant: a bundled bot (`command` None) or a shell command."""

    name: str
    command: str | None = None

    @property
    def bundled(self) -> bool:
        return self.command is None

    def describe(self) -> str:
        return f"bundled:{self.name}" if self.command is None else self.command


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """Everything that defines a tournament (its hash identifies it for resume)."""

    bots: tuple[BotSpec, ...]
    rules: Rules
    players: int = 4
    games: int = 1
    seed: int | None = None  # None: drawn from the OS's CSPRNG when the tournament is created
    time_control: TimeControl = field(default_factory=TimeControl)
    name: str = ""

    def to_json(self, launch: Launch | None = None) -> dict[str, Any]:
        """What identifies the tournament (hashed to find it again for resume)."""
        tc = self.time_control
        launch = launch or Launch()
        limits = launch.limits
        sandbox: dict[str, int] = {"memory_mib": limits.memory_mib,
                                   "cpu_seconds": limits.cpu_seconds,
                                   "processes": limits.processes}
        if limits.files != SandboxLimits().files:  # so, tournaments stored before it was
            sandbox["files"] = limits.files       # a limit keep their identity
        return {
            "sandbox": sandbox if launch.sandbox else None,
            "bots": [{"name": b.name, "command": b.describe()} for b in self.bots],
            "rules": self.rules.to_options(),
            "players": self.players,
            "games": self.games,
            "seed": self.seed,
            "time_control": {
                "move_timeout_ms": tc.move_timeout_ms,
                "bank_ms": tc.bank_ms,
                "increment_ms": tc.increment_ms,
                "strikes": tc.strikes,
            },
        }
