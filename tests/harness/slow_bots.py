"""A bundled bot that takes its time: the same moves (its class's `choose`), each after a
pause, so that a match lasts long enough for a test to act while it is in play.

Tests that stop a database, kill a worker or interrupt a run "while a match is in
play" need matches that a fast machine does not finish between two polls (CI on
97cb7d1 finished a whole tournament between two PostgreSQL restarts). The pause is
wall time, not CPU; a deterministic bot stays deterministic."""

from __future__ import annotations

from pathlib import Path

# bundled bot name -> (module, class)
_CLASSES = {"greedy": ("cfarena.bots.greedy", "GreedyBot"),
            "smart": ("cfarena.bots.smart", "SmartBot")}

_SOURCE = """import time
from {module} import {base}


class Slow{base}({base}):
    def choose(self, turn):
        time.sleep({pause_s!r})
        return super().choose(turn)
"""


def slow_bot(directory: Path, bundled: str, pause_s: float) -> str:
    """The command of bundled bot `bundled` pausing `pause_s` before each move (its file
    written in `directory`, which the sandbox shows it)."""
    module, base = _CLASSES[bundled]
    path = directory / f"slow_{bundled}.py"
    path.write_text(_SOURCE.format(module=module, base=base, pause_s=pause_s))
    return f"python -m cfarena.sdk run {path}:Slow{base}"
