"""The SDK's value types: what a bot is handed (Turn, MatchInfo, MatchResult, ...).

All are frozen dataclasses built by the SDK from protocol messages
(`cfarena.sdk.convert`); a bot only reads them.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from cfarena.engine.events import Event
from cfarena.engine.moves import Move, MoveKind
from cfarena.engine.observation import Observation
from cfarena.engine.rules import ResolvedRules
from cfarena.engine.tiles import Tile


class ProtocolError(ValueError):
    """A protocol message that does not follow arena.proto (bad enum, bad tile, ...)."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """A seat's time control (see `TimeControl` in arena.proto); all times in ms.

    Each decision must be answered within `move_timeout_ms`; time beyond it is
    drawn from the seat's bank (`bank_ms` at the start, `increment_ms` added
    after every answer in time). `strikes` faults forfeit the match; earlier
    ones cost only the turn (the referee plays the fallback move).
    """

    move_timeout_ms: int = 1000
    bank_ms: int = 0
    increment_ms: int = 0
    strikes: int = 1


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """A match this bot was seated in (from `MatchStart`)."""

    match_id: str
    seat: int
    rules: ResolvedRules
    seat_names: tuple[str, ...]
    time_control: TimeControl
    tournament_id: int = 0  # 0 = not part of a tournament


@dataclass(frozen=True, slots=True)
class Turn:
    """A request for a decision.

    `events` are the events since this bot's previous Turn of the match (or since
    the match start); `history` is every event of the match seen so far, this
    Turn's included (the SDK accumulates them). `received_at` is the
    `time.monotonic()` reading taken when the Turn arrived; `deadline_ms` counts
    from when the referee sent it, so the network delay is already spent.
    """

    match_id: str
    turn_id: int  # counts this seat's own Turns of the match: 1, 2, 3, ...
    observation: Observation
    legal_moves: tuple[Move, ...]
    events: tuple[Event, ...]
    history: tuple[Event, ...]
    deadline_ms: int
    bank_ms: int
    received_at: float

    def time_left(self, *, include_bank: bool = False) -> float:
        """Seconds left for this decision (negative once it is overdue).

        With `include_bank`, the time bank is added: overrunning the per-move
        deadline is allowed while the bank lasts, and costs bank time.
        """
        budget = self.deadline_ms + (self.bank_ms if include_bank else 0)
        return budget / 1000.0 - (time.monotonic() - self.received_at)

    @property
    def seat(self) -> int:
        return self.observation.seat

    @property
    def hand(self) -> tuple[Tile, ...]:
        return self.observation.hand

    @property
    def rules(self) -> ResolvedRules:
        return self.observation.rules

    @property
    def plays(self) -> tuple[Move, ...]:
        """The PLAY moves among `legal_moves`."""
        return tuple(m for m in self.legal_moves if m.kind is MoveKind.PLAY)


class FaultKind(enum.Enum):
    """How a fault is classified (arena.proto `FaultKind`)."""

    TIMEOUT = "timeout"  # no Action before the deadline
    ILLEGAL = "illegal"  # a move_index not offered (a stale turn_id is ignored, not a fault)
    PROTOCOL = "protocol"  # a malformed or out-of-order message
    DISCONNECT = "disconnect"  # the stream ended while the match was running
    LIMIT = "limit"  # a sandboxed bot process broke a limit (memory, CPU, processes, output)


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault a seat committed: which seat, what kind, the offending input (or
    what went wrong), when, and whether it forfeited the match.

    The one fault type: the referee's match record, the protocol's `MatchEnd` and
    storage all hold these.
    """

    seat: int
    kind: FaultKind
    detail: str = ""
    turn_id: int = 0  # that seat's own turn id (0 = before its first Turn)
    # whether this fault forfeited the match (a forfeited seat's last fault; the
    # protocol sends the forfeited seats, not this flag)
    forfeit: bool = False


@dataclass(frozen=True, slots=True)
class MatchResult:
    """A finished (or aborted) match (from `MatchEnd`).

    `seat` is this bot's seat (None if the SDK never saw the MatchStart).
    `reason` is "rounds_played", "score_limit" or "aborted".

    It holds no seed and no deal: in a duplicate tournament other matches are
    dealt the same hands, so the protocol does not disclose them.
    """

    match_id: str
    totals: tuple[int, ...]
    ranks: tuple[int, ...]
    round_scores: tuple[tuple[int, ...], ...]
    faults: tuple[Fault, ...]
    forfeited: tuple[int, ...]
    reason: str
    seat: int | None = None

    @property
    def rank(self) -> int | None:
        """This bot's rank (1 = best), if its seat is known."""
        if self.seat is None or self.seat >= len(self.ranks):
            return None
        return self.ranks[self.seat]
