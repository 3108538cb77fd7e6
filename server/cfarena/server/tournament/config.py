"""What defines a tournament: its bots (and the files they run), rules, table size,
games, seed, time control, gauntlet and seat filling."""

from __future__ import annotations

import hashlib
import importlib.util
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cfarena.bots import BUNDLED
from cfarena.engine import Rules
from cfarena.server.referee import TimeControl
from cfarena.server.sandbox import SandboxLimits, cgroups
from cfarena.server.sandbox.host_reset import DEFENCE_SWITCHES, misread_switch, reset_problem
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import (
    PlannedMatch,
    filled_table,
    most_seats,
    round_robin,
)


class TournamentError(Exception):
    """A tournament that cannot start or go on (a bot that does not start, ...)."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """A participant: a bundled bot (`command` None) or a shell command, with the
    SHA-256 of the files it runs (`bot_files`) and a bundled bot's settings (both part
    of the tournament's identity)."""

    name: str
    command: str | None = None
    files: tuple[tuple[str, str], ...] = ()  # (file as named, its SHA-256 hex)
    # a bundled bot's settings (`BundledBot.settings`: variable, value), sorted: given to
    # its processes' environment, and to no other bot's
    settings: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.settings:
            allowed = BUNDLED[self.name].settings if self.bundled and self.name in BUNDLED \
                else ()
            unknown = sorted({key for key, _ in self.settings} - set(allowed))
            if unknown:  # (a stored tournament written by hand, say)
                raise ValueError(f"bot {self.name} has no setting {unknown[0]}")

    @property
    def bundled(self) -> bool:
        return self.command is None

    def describe(self) -> str:
        return f"bundled:{self.name}" if self.command is None else self.command

    def hashed(self) -> BotSpec:
        """This bot with the hashes of its files as they are now (`bot_files`)."""
        return replace(self, files=bot_files(self))


def stored_settings(value: Any) -> tuple[tuple[str, str], ...]:
    """`BotSpec.settings` from a bot's entry of a stored identity (`to_json`'s "settings",
    a mapping, absent when none); TypeError or ValueError when it is not a mapping."""
    return tuple(sorted((str(k), str(v)) for k, v in dict(value or {}).items()))


def bot_files(bot: BotSpec) -> tuple[tuple[str, str], ...]:
    """(name, SHA-256) of the files a bot runs, sorted: a bundled bot's module file
    (named by its module), or the words of a command that are existing files (as
    written, relative to the working directory; `FILE:Class` names FILE, the form
    `python -m cfarena.sdk run` takes). A module a command names by its module name
    (`-m pkg.mod`) or a directory is not hashed."""
    if bot.command is None:
        spec = importlib.util.find_spec(BUNDLED[bot.name].module)
        origin = None if spec is None else spec.origin
        found = {} if origin is None else {BUNDLED[bot.name].module: Path(origin)}
    else:
        try:
            words = shlex.split(bot.command)
        except ValueError:  # unbalanced quotes: the shell will say so when it runs
            words = bot.command.split()
        found = {name: Path(name) for word in words
                 for name in {word, word.rpartition(":")[0]} if name and Path(name).is_file()}
    return tuple(sorted((name, _sha256(path)) for name, path in found.items()))


def _sha256(path: Path) -> str:
    with path.open("rb") as file:  # read in chunks: a bot's data file may be large
        return hashlib.file_digest(file, "sha256").hexdigest()


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
    # fewer bots than seats: fill the table with copies (`filled_table`); a bot's
    # processes at one table could read each other's hands, so only when asked
    fill: bool = False
    gauntlet: str | None = None  # only the tables of this bot (`schedule.round_robin`)

    @property
    def seats_per_bot(self) -> int:
        """The most seats one bot holds at a table: 1, or more when filled."""
        return most_seats(len(self.bots), self.players) if self.fill else 1

    def schedule(self, seed: int) -> list[PlannedMatch]:
        """Every match of the tournament with master seed `seed`."""
        return round_robin([b.name for b in self.bots], self.players, self.games, seed,
                           self.gauntlet)

    def to_json(self, launch: Launch | None = None, *, files: bool = True) -> dict[str, Any]:
        """What identifies the tournament (hashed to find it again for resume); without
        `files`, the identity tournaments had before their bots' files were hashed."""
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
            "bots": [{"name": b.name, "command": b.describe(),
                      **({"files": dict(b.files)} if files and b.files else {}),
                      # absent when none: the identity of older tournaments
                      **({"settings": dict(b.settings)} if b.settings else {})}
                     for b in self.bots],
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
        # absent when 1 or None: the identity of older tournaments
        if self.seats_per_bot != 1:
            identity["seats_per_bot"] = self.seats_per_bot
        if self.gauntlet is not None:
            identity["gauntlet"] = self.gauntlet
        return identity

    def seats_problem(self) -> str | None:
        """Why this schedule is refused (one line): fewer bots than seats without
        `fill`, or a gauntlet's bot that is not one of the bots; None if it is not."""
        if self.gauntlet is not None and self.gauntlet not in {b.name for b in self.bots}:
            return (f"--gauntlet {self.gauntlet}: not one of the bots "
                    f"({', '.join(b.name for b in self.bots)}); give it with --bot")
        held = most_seats(len(self.bots), self.players)
        if held == 1 or self.fill:
            return None
        return (f"{len(self.bots)} bots at {self.players}-seat tables: a bot would hold "
                f"{held} seats of a table (its processes there could read each other's "
                "hands): add bots, lower --players, or --fill to fill the seats with copies")

    def fill_note(self) -> str | None:
        """The line that says which bots `fill` gives several seats (None: no copies)."""
        if self.seats_per_bot == 1:
            return None
        table = filled_table([b.name for b in self.bots], self.players)
        copies = ", ".join(f"{name} {table.count(name)} seats" for name in dict.fromkeys(table)
                           if table.count(name) > 1)
        return (f"--fill: {len(self.bots)} bots at {self.players}-seat tables: "
                f"{' '.join(table)} ({copies} of every match)")


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
    when every one holds), and one per switch of a defence set to a value not
    understood."""
    lines = [line for line in map(misread_switch, DEFENCE_SWITCHES) if line is not None]
    problem = reset_problem()
    if problem is not None:
        lines.append(f"no host cache reset between rotations ({problem}): a bot can carry "
                     "a deal's hands from one rotation to its next through the page cache")
    if launch.sandbox and not all(cgroups.defences().values()):
        lines.append(f"{cgroups.available()}: memory a bot holds in the kernel and the "
                     "CPU of children shorter than a poll may escape its limits")
    return lines
