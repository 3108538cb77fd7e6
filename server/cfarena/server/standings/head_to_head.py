"""Head to head: each pair of bots' results against each other (`rating.head_to_head`:
per deal, so a deal's rotations count as one piece of evidence), as a matrix (row bot
against column bot) and as a gauntlet's column (NEW against each opponent).

A cell is a dict of JSON values: `score` (the row bot's mean score per deal against
the column bot, 1/2 even), `elo` with its 95% interval `elo_low`..`elo_high` (the
Elo difference of the row bot over the column bot; None where the interval is open:
a score of 0 or 1), `matches` and `deals` where both sat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cfarena.server.rating.head_to_head import HeadToHead, head_to_head
from cfarena.server.storage import Database


def head_to_head_pairs(db: Database, tournament_id: int | None = None,
                       pool: str | None = None) -> dict[tuple[str, str], HeadToHead]:
    """(bot a, bot b) -> a's results against b, for every pair that met in the finished
    matches of a tournament or a pool (every finished match without either)."""
    names = db.bot_names()
    return {(names[a], names[b]): found
            for (a, b), found in head_to_head(db.results_by_deal(tournament_id, pool)).items()}


def head_to_head_cell(found: HeadToHead) -> dict[str, Any]:
    """One pair's results as the tables show them (see the module docstring)."""
    return {"score": round(found.score, 3), "elo": _elo(found.elo),
            "elo_low": _elo(found.elo_low), "elo_high": _elo(found.elo_high),
            "matches": found.matches, "deals": found.deals}


def head_to_head_matrix(db: Database, tournament_id: int | None = None,
                        pool: str | None = None, order: Sequence[str] | None = None
                        ) -> dict[str, Any]:
    """{"bots": names, "rows": one list per bot of one cell per bot (None on the
    diagonal and for pairs that never met)}: row bot against column bot. `order`: the
    bots in this order (the standings'), else every bot that met another, by name."""
    pairs = head_to_head_pairs(db, tournament_id, pool)
    bots = list(order) if order is not None else sorted({a for a, _ in pairs})
    return {"bots": bots,
            "rows": [[head_to_head_cell(pairs[a, b]) if (a, b) in pairs else None
                      for b in bots] for a in bots]}


def _elo(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 1)
