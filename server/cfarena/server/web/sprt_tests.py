"""Bot tests (`cfarena sprt`) on the web page: where a test stands and its LLR trace.
Synchronous reads: run them in a worker thread.

A test shows its bots' names, its bounds, its verdict and the figures of its counted
deal groups (a group is counted once all its matches are over, so its score tells
nothing of a deal still in play); never its seed nor a bot's command line. Its matches
are its tournament's (`/tournaments/<id>`: each match, its replay).
"""

from __future__ import annotations

import math
import threading
from typing import Any

from cfarena.server.storage import Database
from cfarena.server.web.data import NotFound, iso

_FIRST_IMPORT = threading.Lock()


def _figure(value: float) -> float | None:
    return round(value, 2) if math.isfinite(value) else None


def sprt_test(db: Database, test_id: int) -> dict[str, Any]:
    """One test: NEW, OLD, state, verdict, bounds, figures and the LLR after each
    counted group. NotFound if there is none."""
    # here, not above: the test's figures need numpy (60 ms), which the web loads only
    # when a test page is asked for, not with every `serve --http-port`; one thread at
    # a time (pages are read in a thread pool: numpy's first import is not one to race)
    with _FIRST_IMPORT:
        from cfarena.server.sprt.sequential import EloModel, SprtBounds, estimate

    test = db.get_sprt_test(test_id)
    if test is None:
        raise NotFound(f"no bot test {test_id}")
    terms = test.config.get("sprt", {})
    bounds = SprtBounds.from_json(terms)
    points = db.sprt_groups(test_id)
    e = estimate([p.score for p in points], max(test.matches // max(test.groups, 1), 1))
    normalized = bounds.model is EloModel.NORMALIZED
    elo = (e.nelo, e.nelo_low, e.nelo_high) if normalized else (e.elo, e.elo_low, e.elo_high)
    return {
        "id": test.id, "tournament_id": test.tournament_id, "new": test.new_bot,
        "old": test.old_bot, "status": test.status.value, "verdict": test.verdict.value,
        "groups": test.groups, "matches": test.matches, "llr": round(test.llr, 3),
        "lower": round(bounds.lower, 3), "upper": round(bounds.upper, 3),
        "elo0": bounds.elo0, "elo1": bounds.elo1, "alpha": bounds.alpha, "beta": bounds.beta,
        "elo_model": bounds.model.value, "unit": "nElo" if normalized else "Elo",
        "score_kind": str(terms.get("score", "")), "players": int(test.config["players"]),
        "elo": [_figure(v) for v in elo], "los": _figure(e.los),
        "created_at": iso(test.created_at), "finished_at": iso(test.finished_at),
        "trace": [{"group": p.group, "score": round(p.score, 4), "llr": round(p.llr, 3)}
                  for p in points],
    }
