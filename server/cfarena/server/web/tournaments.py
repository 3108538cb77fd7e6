"""Tournaments on the web page: their progress and standings, readable from any
machine while workers play them (docs/WORKERS.md). Synchronous reads: run them in a
worker thread.

What a tournament shows is a whitelist of its config: name, status, players, the
rules preset, games per table set, the bots' names and a gauntlet's NEW bot. Never
its master seed (every deal's seed follows from it), never a bot's command line, its
files' hashes or the sandbox settings.
Its matches are listed without seeds (`data.match_summary`); one match shows its
deal only under `disclosure`'s rule (every rotation of the deal over). All its game
logs (`games`, "download all games") once it is finished, but for a deal that some
match not over yet (of another tournament, a rerun with the same seed) deals again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cfarena.match.log_format import log_seed
from cfarena.server.standings import head_to_head_matrix, standings_rows
from cfarena.server.storage import Database, MatchStatus, TournamentInfo, TournamentStatus
from cfarena.server.web.data import NotFound, iso, match_summary

MATCHES_SHOWN = 50


def tournament_summary(db: Database, t: TournamentInfo) -> dict[str, Any]:
    """One tournament, as a list shows it: what it is and how far it is."""
    counts = db.match_counts(t.id)
    config = t.config
    rules = config.get("rules") or {}
    return {
        "id": t.id,
        "name": t.name,
        "status": t.status.value,
        "created_at": iso(t.created_at),
        "finished_at": iso(t.finished_at),
        "players": int(config.get("players", 0)),
        "rules": str(rules.get("preset", "custom")),
        "games": int(config.get("games", 0)),
        "bots": [str(b.get("name")) for b in config.get("bots", [])],
        "gauntlet": None if config.get("gauntlet") is None else str(config["gauntlet"]),
        "progress": {
            "total": sum(counts.values()),
            **{status.value: counts.get(status.value, 0) for status in MatchStatus},
        },
    }


def tournaments(db: Database) -> list[dict[str, Any]]:
    """Every tournament, newest first."""
    return [tournament_summary(db, t) for t in reversed(db.list_tournaments())]


def tournament(db: Database, tournament_id: int, matches_shown: int | None = MATCHES_SHOWN
               ) -> dict[str, Any]:
    """One tournament: its summary, standings (Bradley-Terry with a 95% interval, Elo,
    matches, wins, points per round, faults, a gauntlet's head-to-head column; as
    `cfarena standings --tournament`), the head-to-head matrix (`--matrix`) and its
    latest `matches_shown` matches (None: all). NotFound if there is none."""
    found = db.get_tournament(tournament_id)
    if found is None:
        raise NotFound(f"no tournament {tournament_id}")
    rows = standings_rows(db, tournament_id)
    standings = [{
        "rank": rank, "bot": r["bot"], "bt_rating": _round(r["bt_elo"]),
        "interval": (None if r["ci_low"] is None
                     else [round(r["ci_low"]), round(r["ci_high"])]),
        "elo": round(r["elo"]), "matches": r["matches"], "wins": r["wins"],
        "points_per_round": r["mean_score"], "faults": r["faults"],
        "forfeits": r["forfeits"], "gauntlet": r["gauntlet"],
    } for rank, r in enumerate(rows, 1)]
    matrix = head_to_head_matrix(db, tournament_id, order=[r["bot"] for r in rows])
    matches = [match_summary(m) for m in db.list_matches(tournament_id=tournament_id,
                                                          limit=matches_shown)]
    return {**tournament_summary(db, found), "standings": standings, "matrix": matrix,
            "matches": matches}


def games(db: Database, tournament_id: int) -> Iterator[str] | None:
    """Every game log of a finished tournament as JSON Lines, the lines of `cfarena
    export --tournament` (`replay.log_lines`) of `published_logs`."""
    from cfarena.server.replay.export import log_lines

    logs = published_logs(db, tournament_id)
    return None if logs is None else log_lines(logs)


def published_logs(db: Database, tournament_id: int
                   ) -> Iterator[tuple[str, dict[str, Any] | Exception]] | None:
    """(match id, game log) of every match of a finished tournament, read from the
    database a batch at a time as they are taken; None while it is not finished,
    NotFound if there is none. A log is left out while a match not over deals its seed
    again (`disclosure`; unfinished matches are few: a ladder's running ones, an
    unfinished tournament's)."""
    found = db.get_tournament(tournament_id)
    if found is None:
        raise NotFound(f"no tournament {tournament_id}")
    if found.status is not TournamentStatus.FINISHED:
        return None
    dealt_again = db.seeds_of((MatchStatus.SCHEDULED, MatchStatus.RUNNING,
                               MatchStatus.ABORTED))
    return ((match_id, log) for match_id, log in db.game_logs(tournament_id)
            if isinstance(log, Exception) or log_seed(log) not in dealt_again)


def _round(value: float | None) -> int | None:
    return None if value is None else round(value)
