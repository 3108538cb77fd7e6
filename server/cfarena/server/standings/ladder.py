"""`serve`'s ladder: the online rating per bot version, with the batch Bradley-Terry
estimate of the same (bot, version) as its check."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from cfarena.server.rating.bradley_terry import fit_ratings
from cfarena.server.standings.table import BOOTSTRAP
from cfarena.server.storage import Database, SkillStanding


def ladder_rows(db: Database, pool: str, all_versions: bool = False) -> list[dict[str, Any]]:
    """The ladder: one dict per bot (its latest version; every version with
    `all_versions`), ranked by the online rating's conservative score (mu - 3 sigma),
    with the batch Bradley-Terry estimate of the same (bot, version) as the check."""
    standings = db.skill_standings(pool)
    results = db.results_by_version(pool)  # distinct results, each with its count
    fit = fit_ratings([r for r, _ in results], bootstrap=BOOTSTRAP, seed=0,
                      counts=[k for _, k in results])
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


def leaderboard_rows(db: Database, pool: str, all_versions: bool = False
                     ) -> list[dict[str, Any]]:
    """The leaderboard of `pool`: the ladder (`ladder_rows`, latest versions unless
    `all_versions`), each row with `rank`, the `rating` it is ranked by as shown
    (the online rating, Elo-like, rounded: the order never contradicts it), the
    Bradley-Terry check as its own rank (`check_rank`: a rank, so that nobody compares
    the two scales), its bot's results in the pool (`Database.standings`, every
    version: `matches` finished, `win_share` of them won, `points_per_round`,
    `faults`) and its activity on the ladder (`last_seen`, ISO 8601; `last_error`,
    its latest fault in a match outside tournaments). Presence (connected, revoked)
    is `with_presence`'s."""
    per_bot = {x.name: x for x in db.standings(None, pool)}
    activity = db.ladder_activity()
    ladder = ladder_rows(db, pool, all_versions)
    checked = sorted((r for r in ladder if r["bt_elo"] is not None),
                     key=lambda r: -float(r["bt_elo"]))
    check_rank = {(r["bot"], r["version"]): i for i, r in enumerate(checked, 1)}
    rows = []
    for rank, row in enumerate(ladder, 1):
        bot = per_bot.get(row["bot"])
        matches = bot.matches if bot is not None else 0
        seen = activity.get(row["bot"])
        fault = None if seen is None else seen.fault
        rows.append({
            **row,
            "rank": rank,
            "rating": round(row["skill_elo"]),
            "check_rank": check_rank.get((row["bot"], row["version"])),
            "matches": matches,
            "win_share": round(bot.wins / matches, 3) if bot and matches else None,
            "points_per_round": (None if bot is None or bot.mean_score is None
                                 else round(bot.mean_score, 2)),
            "faults": bot.faults if bot is not None else 0,
            "last_seen": (None if seen is None or seen.seen_at is None
                          else seen.seen_at.isoformat(timespec="seconds")),
            "last_error": None if fault is None else {
                "kind": fault.kind.value, "detail": fault.detail, "match": fault.match_id,
                "at": fault.created_at.isoformat(timespec="seconds")},
        })
    return rows


def with_presence(rows: Sequence[dict[str, Any]], revoked: Collection[str],
                  connected: Collection[str] | None = None, players: int | None = None
                  ) -> list[dict[str, Any]]:
    """`leaderboard_rows` with each bot's presence: `revoked` (its token admits
    nothing), `connected` (dialled in now; None where that is not known, e.g. in
    another process than the arena's) and `waiting_for`: while fewer bots than a
    table's `players` are connected, how many more each connected bot waits for.
    A connected bot with no row yet (no rated match) gets one at the end, unranked."""
    waiting = (None if connected is None or players is None
               else max(players - len(set(connected)), 0) or None)
    listed = {r["bot"] for r in rows}
    unrated: list[dict[str, Any]] = [] if connected is None else [
        {"bot": name, "version": "", "versions": 0, "rank": None, "rating": None,
         "score": None, "skill_elo": None, "mu": None, "sigma": None, "games": 0,
         "seats": [], "bt_elo": None, "ci_low": None, "ci_high": None, "check_rank": None,
         "matches": 0, "win_share": None, "points_per_round": None, "faults": 0,
         "last_seen": None, "last_error": None}
        for name in sorted(set(connected) - listed)]
    return [{**r, "revoked": r["bot"] in revoked,
             "connected": None if connected is None else r["bot"] in connected,
             "waiting_for": waiting if connected is not None and r["bot"] in connected
             else None}
            for r in [*rows, *unrated]]


def ladder_board(db: Database, pool: str, all_versions: bool = False
                 ) -> list[dict[str, Any]]:
    """`leaderboard_rows` with what storage knows of presence (`with_presence`: revoked
    bots; who is connected is the arena's, not known here)."""
    revoked = {b.name for b in db.list_bots() if b.revoked_at is not None}
    return with_presence(leaderboard_rows(db, pool, all_versions), revoked)


def _later(a: SkillStanding, b: SkillStanding) -> bool:
    """Whether `a` was rated more recently than `b` (never rated: oldest)."""
    if a.updated_at is None:
        return False
    return b.updated_at is None or a.updated_at > b.updated_at
