"""A tournament's or a pool's standings per bot: the order-free Bradley-Terry fit with
its interval (the one rating the tables show), each bot's results and, in a gauntlet,
NEW's head-to-head result against it. The sequential Elo (`elo`: match order matters,
so it can contradict the fit) stays in the rows for scripts only."""

from __future__ import annotations

from typing import Any

from cfarena.server.rating.bradley_terry import fit_ratings
from cfarena.server.standings.head_to_head import head_to_head_cell, head_to_head_pairs
from cfarena.server.storage import Database, StorageError

BOOTSTRAP = 200  # resamples of the Bradley-Terry fit's 95% interval


def standings_rows(
    db: Database, tournament_id: int | None = None, pool: str | None = None,
    bootstrap: int = BOOTSTRAP,
) -> list[dict[str, Any]]:
    """One dict per bot, best first (by the Bradley-Terry estimate, then Elo). In a
    gauntlet each row's `gauntlet` is NEW's head-to-head cell against its bot
    (`head_to_head`, with `new`: NEW's name), else None. The interval comes from
    `bootstrap` resamples (0: none, the point estimate for both ends)."""
    table = db.standings(tournament_id, pool)
    fit = fit_ratings(db.results_for_fit(tournament_id, pool), bootstrap=bootstrap, seed=0)
    new = _gauntlet(db, tournament_id)
    pairs = head_to_head_pairs(db, tournament_id, pool) if new is not None else {}
    rows = []
    for s in table:
        est = fit.get(s.bot_id)
        against = pairs.get((new, s.name)) if new is not None else None
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
                "gauntlet": (None if against is None
                             else {"new": new, **head_to_head_cell(against)}),
            }
        )

    def order(row: dict[str, Any]) -> tuple[float, float]:
        bt = row["bt_elo"]
        return (-(float(bt) if bt is not None else -1e9), -float(row["elo"]))

    rows.sort(key=order)
    return rows


def leader(db: Database, tournament_id: int) -> str | None:
    """"name (rating)": the first row of the tournament's standings so far, as the
    final table will show it (the Bradley-Terry estimate, without its interval); None
    before any match, or when the database is away."""
    try:
        rows = standings_rows(db, tournament_id, bootstrap=0)
    except StorageError:  # the database is away: the progress line goes without
        return None
    best = next((r for r in rows if r["bt_elo"] is not None), None)
    return None if best is None else f"{best['bot']} ({best['bt_elo']:.0f})"


def _gauntlet(db: Database, tournament_id: int | None) -> str | None:
    """The NEW bot of a gauntlet tournament; None for any other table."""
    found = None if tournament_id is None else db.get_tournament(tournament_id)
    new = None if found is None else found.config.get("gauntlet")
    return None if new is None else str(new)
