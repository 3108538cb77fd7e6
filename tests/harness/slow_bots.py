"""A bundled bot that takes its time: the same moves (its class's `choose`), each after a
pause, so that a match lasts long enough for a test to act while it is in play; and
the moment to act (`one_begun_within`, `stored_and_one_begun`).

A bot that thinks (montecarlo's search) only to make matches last burns a core that
the suite's other tests need: a slow bot searching briefly and pausing the rest keeps
the pace for none of it.

Tests that stop a database, kill a worker or interrupt a run "while a match is in
play" need matches that a fast machine does not finish between two polls (CI on
97cb7d1 finished a whole tournament between two PostgreSQL restarts). The pause is
wall time, not CPU; a deterministic bot stays deterministic."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from cfarena.server.storage import MatchInfo, MatchStatus, StorageError, open_database

# bundled bot name -> (module, class)
_CLASSES = {"greedy": ("cfarena.bots.greedy", "GreedyBot"),
            "smart": ("cfarena.bots.smart", "SmartBot"),
            "montecarlo": ("cfarena.bots.montecarlo", "MonteCarloBot")}

_SOURCE = """import time
from {module} import {base}


class Slow{base}({base}):
    def choose(self, turn):
        time.sleep({pause_s!r})
        return super().choose(turn)
"""


def slow_bot_class(directory: Path, bundled: str, pause_s: float) -> str:
    """`FILE:CLASS` (what `python -m cfarena.sdk run` takes) of bundled bot `bundled`
    pausing `pause_s` before each move, its file written in `directory`."""
    module, base = _CLASSES[bundled]
    path = directory / f"slow_{bundled}.py"
    path.write_text(_SOURCE.format(module=module, base=base, pause_s=pause_s))
    return f"{path}:Slow{base}"


def slow_bot(directory: Path, bundled: str, pause_s: float) -> str:
    """The command of bundled bot `bundled` pausing `pause_s` before each move (its file
    written in `directory`, which the sandbox shows it)."""
    return f"python -m cfarena.sdk run {slow_bot_class(directory, bundled, pause_s)}"


def one_begun_within(matches: Iterable[MatchInfo], seconds: float) -> bool:
    """Whether one of `matches` is in play and began under `seconds` ago: one a test
    can count on still being in play when it acts now (a match seen running may be
    near its end)."""
    now = datetime.now(UTC)
    return any(m.status is MatchStatus.RUNNING and m.started_at is not None
               and (now - m.started_at).total_seconds() < seconds for m in matches)


def stored_and_one_begun(url: str, seconds: float) -> bool:
    """Whether the database at `url` has a finished match and one begun under `seconds`
    ago (`one_begun_within`); False before its tables exist. Matches often start in
    pairs and end together: the first stored match alone may leave none in play."""
    try:
        with open_database(url, create=False) as db:
            matches = db.list_matches(limit=None)
    except StorageError:  # no tables yet
        return False
    return (any(m.status is MatchStatus.FINISHED for m in matches)
            and one_begun_within(matches, seconds))
