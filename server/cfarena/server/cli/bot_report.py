"""`cfarena bots show NAME`: what a bot's owner may see of it
(`standings.bot_report`), as tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cfarena.server.cli.common import out


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
