"""`cfarena bots show NAME`: what a bot's owner may see of it
(`standings.bot_report`), as tables."""

from __future__ import annotations

from typing import Any

from cfarena.server.cli.common import light_table, out


def print_bot_report(report: dict[str, Any]) -> None:
    """The versions table, then the latest faults: readable at 80 columns (light rules,
    times over two lines, a long version or match id wraps, never cut)."""
    versions = light_table(title=f"Bot {report['bot']}: versions (pool {report['pool']})",
                           title_justify="left")
    longest = max((len(v["version"]) for v in report["versions"]), default=0)
    versions.add_column("version", overflow="fold", width=min(16, max(7, longest)))
    for column in ("games", "first", "last", "rating", "turns", "median\nms", "p99\nms"):
        versions.add_column(column, justify="right", no_wrap=True)
    for v in report["versions"]:  # the rating only: the score is the same on its own scale
        versions.add_row(
            v["version"] or "-", str(v["matches"]), _utc(v["first"]), _utc(v["last"]),
            "-" if v["skill_elo"] is None else f"{v['skill_elo']:.0f}",
            str(v["decisions"]),
            "-" if v["median_ms"] is None else f"{v['median_ms']:.1f}",
            "-" if v["p99_ms"] is None else f"{v['p99_ms']:.1f}")
    versions.caption = ("rating: the version's online rating on an Elo scale (a new bot "
                        "1500; its score, mu - 3 sigma, in --json); turns: its decisions, "
                        "timed in ms; times UTC")
    versions.caption_justify = "left"
    out.print(versions)
    faults = light_table("match", "turn", "kind", "detail", title="Latest faults",
                         title_justify="left")
    faults.columns[0].overflow = faults.columns[3].overflow = "fold"
    for f in report["faults"]:
        faults.add_row(f["match"], str(f["turn"]), f["kind"], f["detail"])
    out.print(faults if report["faults"] else "No faults.")


def _utc(iso: str | None) -> str:
    """An ISO 8601 UTC time as its day over its time ("2026-12-06\n18:04:02")."""
    return "-" if not iso else iso.removesuffix("+00:00").replace("T", "\n")
