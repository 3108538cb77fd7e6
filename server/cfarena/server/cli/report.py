"""Standings: stored Elo plus the order-free Bradley-Terry estimate, as a table or JSON."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cfarena.server.ratings import fit_ratings
from cfarena.server.storage import Database


def standings_rows(
    db: Database, tournament_id: int | None = None, pool: str | None = None
) -> list[dict[str, Any]]:
    """One dict per bot, best first (by the Bradley-Terry estimate, then Elo)."""
    table = db.standings(tournament_id, pool)
    fit = fit_ratings(db.results_for_fit(tournament_id, pool), bootstrap=200, seed=0)
    rows = []
    for s in table:
        est = fit.get(s.bot_id)
        rows.append(
            {
                "bot": s.name,
                "elo": round(s.elo, 1),
                "bt_elo": round(est.elo, 1) if est else None,
                "ci_low": round(est.low, 1) if est else None,
                "ci_high": round(est.high, 1) if est else None,
                "matches": s.matches,
                "wins": s.wins,
                "mean_score": None if s.mean_score is None else round(s.mean_score, 2),
                "faults": s.faults,
                "forfeits": s.forfeits,
            }
        )
    def order(row: dict[str, Any]) -> tuple[float, float]:
        bt = row["bt_elo"]
        return (-(float(bt) if bt is not None else -1e9), -float(row["elo"]))

    rows.sort(key=order)
    return rows


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
