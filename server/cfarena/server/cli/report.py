"""Standings as tables: the rows of `cfarena.server.standings` (stored Elo plus the
order-free Bradley-Terry estimate per bot; the ladder's online rating per bot version)."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def standings_table(rows: list[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("bot", overflow="fold")  # a long name wraps, never cut
    table.add_column("rating (95% CI)", justify="right", no_wrap=True)
    table.add_column("Elo", justify="right")
    table.add_column("games", justify="right")
    table.add_column("wins", justify="right")
    table.add_column("pts/rnd", justify="right")
    table.add_column("faults", justify="right")
    for i, r in enumerate(rows, 1):
        rating = (
            f"{r['bt_elo']:.0f} ({r['ci_low']:.0f}-{r['ci_high']:.0f})"
            if r["bt_elo"] is not None
            else "-"
        )
        mean = "-" if r["mean_score"] is None else f"{r['mean_score']:.1f}"
        faults = str(r["faults"]) + (f" ({r['forfeits']} forfeits)" if r["forfeits"] else "")
        table.add_row(str(i), r["bot"], rating, f"{r['elo']:.0f}", str(r["matches"]),
                      str(r["wins"]), mean, faults)
    table.caption = (
        "rating: Bradley-Terry fit over all results (order-free), bootstrap 95% CI; "
        "Elo: pairwise multiplayer Elo in match order; pts/round: lower is better"
    )
    table.caption_justify = "left"
    return table


def ladder_table(rows: list[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("bot", overflow="fold")
    table.add_column("version", overflow="fold")
    table.add_column("score", justify="right")
    table.add_column("Elo-like", justify="right")
    table.add_column("mu ± sigma", justify="right", no_wrap=True)
    table.add_column("games", justify="right")
    table.add_column("BT check (95% CI)", justify="right", no_wrap=True)
    for i, r in enumerate(rows, 1):
        check = (f"{r['bt_elo']:.0f} ({r['ci_low']:.0f}-{r['ci_high']:.0f})"
                 if r["bt_elo"] is not None else "-")
        version = r["version"] or "-"
        if r["versions"] > 1:
            version += f" (of {r['versions']})"
        table.add_row(str(i), r["bot"], version, f"{r['score']:.2f}", f"{r['skill_elo']:.0f}",
                      f"{r['mu']:.1f} ± {r['sigma']:.1f}", str(r["games"]), check)
    table.caption = (
        "ranked by score = mu - 3 sigma of the online Weng-Lin (Plackett-Luce) rating, "
        "per bot version, updated after every match; Elo-like: the score on an Elo scale "
        "(a new bot: 1500); BT check: the order-free Bradley-Terry fit of the same versions"
    )
    table.caption_justify = "left"
    return table
