"""A pool's start failures: counted towards giving a bot up, unless the referee froze.

A bot whose processes fail to start START_ATTEMPTS times in a row is given up:
before the tournament starts that is a `BotStartError`, afterwards its seats
forfeit (`BotPool.take`). A failure that may be the referee's doing (its loop
froze: referee/lag.py) is not counted, at most EXCUSED_IN_A_ROW times in a row.
"""

from __future__ import annotations

from collections.abc import Iterable

from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.lag import LoopLag
from cfarena.server.sandbox.failure_lines import around

# consecutive processes of one bot that may fail to start before it is given up
START_ATTEMPTS = 3
EXCUSED_IN_A_ROW = 3 * START_ATTEMPTS  # start failures in a referee's freezes not counted


class BotStartError(Exception):
    """A bot whose processes do not start or connect (the message quotes why); `output`:
    what its last process printed (for its seats' logs and --log-dir)."""

    def __init__(self, message: str, bot: str = "", output: str = "") -> None:
        super().__init__(message)
        self.bot = bot
        self.output = output


class StartFailures:
    """Each bot's start failures in a row (counted, and excused), and the bots given up."""

    def __init__(self, names: Iterable[str], lag: LoopLag) -> None:
        self.lag = lag
        names = list(names)
        self._counted = dict.fromkeys(names, 0)
        # start failures in a row not counted because the referee froze (`count_process`)
        self._excused = dict.fromkeys(names, 0)
        self.given_up: dict[str, str] = {}  # bot -> why (a BotStartError's message)
        self.outputs: dict[str, str] = {}  # bot -> what its last failed process printed

    def started(self, name: str) -> None:
        """A process of `name` started and connected: its failures in a row end."""
        self._counted[name] = self._excused[name] = 0

    def forgive(self, name: str) -> None:
        """Forget the counted failures of `name` (its fork servers'; it runs without)."""
        self._counted[name] = 0

    def count_process(self, name: str, connection: BotConnection | None, started_at: float,
                      reason: str) -> str:
        """Count a process's failure to start towards giving its bot up, unless it may
        be the referee's doing (referee/lag.py): its connection ended during or just
        after a freeze (`ended_by_stall`), or, never connected, it was started (at
        `started_at`, the lag's clock) before a freeze that came before its failure (it
        could not connect to a frozen referee). At most EXCUSED_IN_A_ROW such failures
        of one bot in a row are not counted (a bot that keeps failing on a referee that
        keeps freezing is given up all the same). `reason`, as it is logged."""
        if connection is not None and connection.closed:
            excused = self.lag.ended_by_stall(connection.closed_at)
        else:
            excused = self.lag.froze_since(started_at)
        return self.count(name, reason, excused)

    def count(self, name: str, reason: str, excused: bool) -> str:
        """Count a start failure of `name` unless `excused` (and not excused too often
        in a row); `reason`, as it is logged."""
        if excused and self._excused[name] < EXCUSED_IN_A_ROW:
            self._excused[name] += 1
            return around(reason, after=" (the referee froze meanwhile: not counted "
                                        "against the bot)")
        self._counted[name] += 1
        return reason

    def give_up_if_exhausted(self, name: str, reason: str, output: str = "") -> bool:
        """Give `name` up (for `reason`, its last failure, whose process printed
        `output`) if it has failed to start START_ATTEMPTS times in a row; whether it
        is given up."""
        if self._counted[name] < START_ATTEMPTS:
            return False
        self.given_up[name] = f"bot {name!r} {reason}"
        self.outputs[name] = output
        return True

    def error(self, name: str) -> BotStartError:
        """The error of `name`, given up: why, and what its last process printed."""
        return BotStartError(self.given_up[name], name, self.outputs.get(name, ""))
