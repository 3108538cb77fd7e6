"""What the referee reports as it runs, for metrics (cfarena.server.ops.metrics).

A `RefereeObserver` is given to `RefereeServer(observer=...)`; the server and
its match runners call it where things happen. Every call is made on the
referee's event loop and must return at once (it sits on the decision path):
count, do not do I/O.
"""

from __future__ import annotations

from typing import Protocol

from cfarena.server.match_record import FaultKind, MatchRecord


class RefereeObserver(Protocol):
    def connected(self, bot: str) -> None:
        """A stream of `bot` passed its handshake."""

    def disconnected(self, bot: str) -> None:
        """That stream ended."""

    def match_started(self, match_id: str) -> None:
        """A match was seated and starts playing."""

    def match_ended(self, record: MatchRecord) -> None:
        """A match started earlier ended (finished or aborted)."""

    def decided(self, elapsed_ms: float) -> None:
        """A seat answered a Turn `elapsed_ms` after it was sent (in time or not)."""

    def faulted(self, kind: FaultKind) -> None:
        """A seat committed a fault (the law recorded it)."""
