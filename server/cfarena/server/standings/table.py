"""A tournament's or a pool's standings per bot: the order-free Bradley-Terry fit and
the sequential Elo, with each bot's results."""

from __future__ import annotations

from typing import Any

from cfarena.server.rating.bradley_terry import fit_ratings
from cfarena.server.storage import Database

BOOTSTRAP = 200  # resamples of the Bradley-Terry fit's 95% interval


def standings_rows(
    db: Database, tournament_id: int | None = None, pool: str | None = None
) -> list[dict[str, Any]]:
    """One dict per bot, best first (by the Bradley-Terry estimate, then Elo)."""
    table = db.standings(tournament_id, pool)
    fit = fit_ratings(db.results_for_fit(tournament_id, pool), bootstrap=BOOTSTRAP, seed=0)
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
