"""Standings: stored Elo plus the order-free Bradley-Terry estimate, and the ladder's
online rating per bot version, as tables or JSON."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cfarena.server.ratings import fit_ratings
from cfarena.server.storage import Database, SkillStanding


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


def ladder_rows(db: Database, pool: str, all_versions: bool = False) -> list[dict[str, Any]]:
    """The ladder: one dict per bot (its latest version; every version with
    `all_versions`), ranked by the online rating's conservative score (mu - 3 sigma),
    with the batch Bradley-Terry estimate of the same (bot, version) as the check."""
    standings = db.skill_standings(pool)
    fit = fit_ratings(db.results_by_version(pool), bootstrap=200, seed=0)
    versions: dict[str, int] = {}
    for x in standings:
        versions[x.name] = versions.get(x.name, 0) + 1
    if not all_versions:
        latest: dict[str, SkillStanding] = {}
        for x in standings:
            seen = latest.get(x.name)
            if seen is None or _later(x, seen):
                latest[x.name] = x
        standings = [x for x in standings if latest[x.name] is x]
    rows = []
    for x in standings:  # best conservative score first
        est = fit.get((x.bot_id, x.version))
        rows.append({
            "bot": x.name,
            "version": x.version,
            "versions": versions[x.name],
            "score": round(x.conservative, 2),
            "skill_elo": round(x.elo, 1),
            "mu": round(x.mu, 2),
            "sigma": round(x.sigma, 2),
            "games": x.games,
            "seats": list(x.seats),
            "bt_elo": round(est.elo, 1) if est else None,
            "ci_low": round(est.low, 1) if est else None,
            "ci_high": round(est.high, 1) if est else None,
        })
    return rows


def _later(a: SkillStanding, b: SkillStanding) -> bool:
    """Whether `a` was rated more recently than `b` (never rated: oldest)."""
    if a.updated_at is None:
        return False
    return b.updated_at is None or a.updated_at > b.updated_at


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
