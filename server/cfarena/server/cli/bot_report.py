"""`cfarena bots show NAME`: what a bot's owner may see of it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.table import Table

from cfarena.server.cli.common import out
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


def print_bot_report(report: dict[str, Any]) -> None:
    versions = Table(title=f"Bot {report['bot']}: versions (pool {report['pool']})",
                     title_justify="left")
    for column in ("version", "matches", "first", "last", "score", "Elo-like", "decisions",
                   "median ms", "p99 ms"):
        versions.add_column(column, justify="left" if column == "version" else "right")
    for v in report["versions"]:
        versions.add_row(
            v["version"] or "-", str(v["matches"]), v["first"], v["last"],
            "-" if v["score"] is None else f"{v['score']:.2f}",
            "-" if v["skill_elo"] is None else f"{v['skill_elo']:.0f}",
            str(v["decisions"]),
            "-" if v["median_ms"] is None else f"{v['median_ms']:.1f}",
            "-" if v["p99_ms"] is None else f"{v['p99_ms']:.1f}")
    out.print(versions)
    faults = Table("match", "turn", "kind", "detail", title="Latest faults",
                   title_justify="left")
    faults.columns[3].overflow = "fold"
    for f in report["faults"]:
        faults.add_row(f["match"], str(f["turn"]), f["kind"], f["detail"])
    out.print(faults if report["faults"] else "No faults.")
