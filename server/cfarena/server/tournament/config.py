"""What defines a tournament: its bots, rules, table size, games, seed and time control."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import Rules
from cfarena.server.referee import TimeControl
from cfarena.server.sandbox import SandboxLimits, cgroups
from cfarena.server.sandbox.host_reset import reset_problem
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import most_seats


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
    # the seats one bot may hold at one table (fewer bots than seats): its processes
    # at that table could read each other's hands, so more than 1 only when asked
    seats_per_bot: int = 1

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
        identity: dict[str, Any] = {
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
        if self.seats_per_bot != 1:  # absent when 1: the identity of older tournaments
            identity["seats_per_bot"] = self.seats_per_bot
        return identity

    def seats_problem(self) -> str | None:
        """Why this schedule is refused (one line): a bot would hold more seats of a
        table than `seats_per_bot` allows; None if it is not."""
        held = most_seats(len(self.bots), self.players)
        if held <= self.seats_per_bot:
            return None
        return (f"{len(self.bots)} bots at {self.players}-seat tables give one bot {held} "
                f"seats of a table, and its processes there could read each other's "
                f"hands: add bots, lower --players, or allow it with --seats-per-bot {held}")


def host_defences(launch: Launch) -> dict[str, bool]:
    """Which defences against what a bot could keep in or take from the host
    (docs/FAIRPLAY.md) this machine gives a tournament's bots: `page_cache_reset` (the
    host's caches are dropped between phases), `seccomp_cache_probes` (the sandbox
    refuses the cheap page-cache probes), and the kernel's limits per sandbox
    (`memory_cgroup`, `pids_cgroup`, `cpu_cgroup`: `cgroups.defences`)."""
    held = {"page_cache_reset": reset_problem() is None,
            "seccomp_cache_probes": launch.sandbox}
    kernel = cgroups.defences()
    held.update((key, launch.sandbox and value) for key, value in kernel.items())
    return held


def missing_defences(launch: Launch) -> list[str]:
    """One line per defence this machine cannot give, saying what it means (nothing
    when every one holds)."""
    lines = []
    problem = reset_problem()
    if problem is not None:
        lines.append(f"no host cache reset between rotations ({problem}): a bot can carry "
                     "a deal's hands from one rotation to its next through the page cache")
    if launch.sandbox and not all(cgroups.defences().values()):
        lines.append(f"{cgroups.available()}: memory a bot holds in the kernel and the "
                     "CPU of children shorter than a poll may escape its limits")
    return lines
