"""`serve`'s ladder: the online rating per bot version, with the batch Bradley-Terry
estimate of the same (bot, version) as its check."""

from __future__ import annotations

from typing import Any

from cfarena.server.rating.bradley_terry import fit_ratings
from cfarena.server.standings.table import BOOTSTRAP
from cfarena.server.storage import Database, SkillStanding


def ladder_rows(db: Database, pool: str, all_versions: bool = False) -> list[dict[str, Any]]:
    """The ladder: one dict per bot (its latest version; every version with
    `all_versions`), ranked by the online rating's conservative score (mu - 3 sigma),
    with the batch Bradley-Terry estimate of the same (bot, version) as the check."""
    standings = db.skill_standings(pool)
    fit = fit_ratings(db.results_by_version(pool), bootstrap=BOOTSTRAP, seed=0)
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


def leaderboard_rows(db: Database, pool: str) -> list[dict[str, Any]]:
    """The ladder of `pool` (latest versions), each row with its bot's results in the
    pool (`Database.standings`, every version): `matches` finished, the share of
    them won (`win_share`), `points_per_round` and `faults`."""
    per_bot = {x.name: x for x in db.standings(None, pool)}
    rows = []
    for row in ladder_rows(db, pool):
        bot = per_bot.get(row["bot"])
        matches = bot.matches if bot is not None else 0
        rows.append({
            **row,
            "matches": matches,
            "win_share": round(bot.wins / matches, 3) if bot and matches else None,
            "points_per_round": (None if bot is None or bot.mean_score is None
                                 else round(bot.mean_score, 2)),
            "faults": bot.faults if bot is not None else 0,
        })
    return rows


def _later(a: SkillStanding, b: SkillStanding) -> bool:
    """Whether `a` was rated more recently than `b` (never rated: oldest)."""
    if a.updated_at is None:
        return False
    return b.updated_at is None or a.updated_at > b.updated_at
