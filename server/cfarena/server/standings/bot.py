"""One bot as its owner may see it: versions with their online rating, faults with
their details, decision times, and its rating after each rated match."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cfarena.server.storage import Database

LATENCY_MATCHES = 200  # decision times come from this many of its latest matches


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of ascending values, nearest rank."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def bot_report(db: Database, name: str, pool: str, faults: int) -> dict[str, Any]:
    """Versions (matches, first and last seen, online rating in `pool`), the latest
    `faults` faults with their details, and the decision times per version (ms, as
    the referee measured them, from the game logs of its latest matches).
    StorageError if there is no such bot."""
    history = db.bot_versions(name)
    skills = {x.version: x for x in db.skill_standings(pool) if x.name == name}
    times = db.decision_times(name, LATENCY_MATCHES)
    versions = []
    for h in history:
        skill = skills.get(h.version)
        got = sorted(times.get(h.version, []))
        versions.append({
            "version": h.version,
            "matches": h.matches,
            "first": h.first_at.isoformat(timespec="seconds"),
            "last": h.last_at.isoformat(timespec="seconds"),
            "score": None if skill is None else round(skill.conservative, 2),
            "skill_elo": None if skill is None else round(skill.elo, 1),
            "decisions": len(got),
            "median_ms": round(percentile(got, 0.5), 3) if got else None,
            "p99_ms": round(percentile(got, 0.99), 3) if got else None,
        })
    return {
        "bot": name,
        "pool": pool,
        "versions": versions,
        "faults": [
            {"match": f.match_id, "seat": f.seat, "turn": f.turn_id, "kind": f.kind.value,
             "detail": f.detail, "at": f.created_at.isoformat(timespec="seconds")}
            for f in db.bot_faults(name, faults)
        ],
    }


def rated_games(db: Database, name: str, pool: str) -> dict[str, int]:
    """Version -> finished matches of bot `name` rated in `pool`."""
    return {x.version: x.games for x in db.skill_standings(pool) if x.name == name}


def rating_history(db: Database, name: str, pool: str,
                   last: int | None = None) -> list[dict[str, Any]]:
    """The version and the online rating (Elo-like, as on the ladder) of bot `name`
    after each of its rated matches in `pool`, oldest first, each numbered
    among them (`number`, 1: its first rated match); with `last`, only the latest
    `last` points."""
    return [{"number": number, "version": version, "rating": round(skill.elo, 1)}
            for number, version, skill in db.skill_history(name, pool, last)]
