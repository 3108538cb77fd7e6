"""What the referee reports as it runs, for metrics (cfarena.server.ops.metrics) and
spectators (`MatchWatcher`: the web page's live view, cfarena.server.web.hub).

A `RefereeObserver` is given to `RefereeServer(observer=...)`; the server and
its match runners call it where things happen. Every call is made on the
referee's event loop and must return at once (it sits on the decision path):
count, do not do I/O.
"""

from __future__ import annotations

from typing import Protocol

from cfarena.engine.state import MatchState
from cfarena.match.record import MatchRecord


class RefereeObserver(Protocol):
    def connected(self, bot: str) -> None:
        """A stream of `bot` passed its handshake."""

    def disconnected(self, bot: str) -> None:
        """That stream ended."""

    def match_started(self, match_id: str) -> None:
        """A match was seated and starts playing."""

    def match_ended(self, record: MatchRecord) -> None:
        """A match started earlier ended (finished or aborted). Its decisions and
        faults are counted from the record, now and not as they happen: a running
        count of decisions would tell a spectator of /metrics what the public events
        hide (a drawn tile that fits and is kept is a decision, a forced pass is not)."""


class MatchWatcher(Protocol):
    """Told when each match starts and ends (the live view of the web page).

    Called on the referee's event loop: return at once, no I/O. The state object is
    the referee's own: read it only on the loop until `ended`, never change it, never
    let full information out of it. There is deliberately no call when a seat is
    asked to decide: when that happens is what the public events hide (a drawn tile
    that fits, under play_drawn="may"); the watcher looks at the state on its own
    clock instead (cfarena.server.web.hub).
    """

    def playing(self, match_id: str, state: MatchState) -> None:
        """The match started; `state` is its live state (it changes as play goes on)."""

    def ended(self, match_id: str, record: MatchRecord) -> None:
        """The match ended (finished or aborted); no more calls for it."""
