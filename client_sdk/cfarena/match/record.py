"""What the referee records of a match: its status, faults, applied moves and result.

Plain values with no behaviour beyond their JSON forms. `cfarena.match.law`
fills them in; the referee hands them on, `match.log_format` turns them into a log and
storage keeps them. `MatchStatus` is the one enum for where a match stands and
how it ended, used by the referee record, the game log (`status`) and the
database (`matches.status`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import Event, Rules
from cfarena.engine.dealing import RoundDeal

# the wire's fault kinds (cfarena.v1.FaultKind) and the one fault type, for bots,
# referee and storage
from cfarena.sdk.types import Fault as Fault
from cfarena.sdk.types import FaultKind as FaultKind
from cfarena.sdk.types import TimeControl as TimeControl


class MatchStatus(enum.StrEnum):
    """Where a match stands. A match ends FINISHED (the rules ended it; the reason
    says how) or ABORTED (cut off: the reason says why); SCHEDULED is storage's
    only (planned, not started); a log or a record is RUNNING only until it ends."""

    SCHEDULED = "scheduled"
    RUNNING = "running"
    FINISHED = "finished"
    ABORTED = "aborted"


# the statuses a game log may hold (a log is written from a referee record)
LOG_STATUSES = (MatchStatus.FINISHED, MatchStatus.ABORTED, MatchStatus.RUNNING)


def fault_to_dict(fault: Fault) -> dict[str, object]:
    """A fault as the game log writes it."""
    return {
        "seat": fault.seat,
        "kind": fault.kind.value,
        "detail": fault.detail,
        "turn_id": fault.turn_id,
        "forfeit": fault.forfeit,
    }


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One applied move: who, what, whether a bot chose it, and how long it took."""

    seat: int
    move: str  # Move.key
    decided: bool  # True if the bot was asked; False for forced moves and forfeited seats
    elapsed_ms: float | None  # the bot's answer time, measured at the referee
    turn_id: int | None  # the seat's own decision number (1, 2, ...); None if not asked
    fallback: bool = False  # played by the referee for a faulted/forfeited seat

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seat": self.seat, "move": self.move}
        if self.decided:
            out["turn_id"] = self.turn_id
            out["ms"] = None if self.elapsed_ms is None else round(self.elapsed_ms, 3)
        if self.fallback:
            out["fallback"] = True
        return out


@dataclass
class MatchRecord:
    """Everything about a played (or aborted) match: enough to re-simulate it."""

    match_id: str
    rules: Rules
    players: int
    seed: int
    seat_bots: list[str]
    time_control: TimeControl
    status: MatchStatus = MatchStatus.RUNNING
    reason: str = ""
    totals: list[int] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    round_scores: list[list[int]] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    deals: list[RoundDeal] = field(default_factory=list)
    started_at: float = 0.0
    finished_at: float = 0.0
    tournament_id: int | None = None
    key: str | None = None
