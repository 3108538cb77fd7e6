"""What the pages and the JSON API show, read from the database (synchronous: run it
in a worker thread, never on the event loop).

Everything here goes through `disclosure` before it leaves: a match's seed, log
and hands only when its deal is over everywhere; never a token, a token hash, a
tournament's config (its master seed) or a bot's command line.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from cfarena.server.sprt.luck import seat_luck
from cfarena.server.standings import (
    bot_report,
    leaderboard_rows,
    rated_games,
    rating_history,
    with_presence,
)
from cfarena.server.storage import (
    Database,
    MatchDetail,
    MatchInfo,
    MatchStatus,
    SeatInfo,
    StorageError,
)
from cfarena.server.web.disclosure import deal_revealed

LEADERBOARD_TTL_S = 2.0  # the Bradley-Terry bootstrap is costly: at most this often
RECENT_MATCHES = 20
FAULTS_SHOWN = 50
# points of a bot's rating history shown (its latest): a page's work and memory stay
# the same however many matches the bot has played
RATING_POINTS = 500
REPLAYS_KEPT = 32  # rendered replay pages kept (LRU)
LUCK_KEPT = 256  # matches' luck kept (LRU; a few hundred bytes each)


class NotFound(Exception):
    """No such bot or match (the message says which)."""


V = TypeVar("V")


class _Latest(Generic[V]):
    """What was computed for the latest `size` matches (least recently used goes;
    thread-safe: the web's reads run on several threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> tuple[bool, V | None]:
        """(True, value) if `key` is kept (it becomes the latest), else (False, None)."""
        with self._lock:
            if key not in self._kept:
                return False, None
            self._kept.move_to_end(key)
            return True, self._kept[key]

    def put(self, key: str, value: V) -> None:
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def seat_json(s: SeatInfo) -> dict[str, Any]:
    return {"seat": s.seat, "bot": s.bot_name, "total": s.total, "rank": s.rank,
            "forfeited": s.forfeited, "faults": s.faults}


def match_summary(m: MatchInfo) -> dict[str, Any]:
    """A match in a list: no seed, no log (see `match_json` for one match)."""
    return {
        "id": m.id, "status": m.status.value, "pool": m.pool, "players": m.players,
        "tournament_id": m.tournament_id, "reason": m.reason,
        "created_at": iso(m.created_at), "started_at": iso(m.started_at),
        "finished_at": iso(m.finished_at), "duration_s": m.duration_s,
        "seats": [seat_json(s) for s in sorted(m.seats, key=lambda s: s.seat)],
    }


def match_json(detail: MatchDetail, revealed: bool,
               luck: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One match: its result, scores per round and faults; its seed, the link to its
    log and each seat's luck (`luck_json`) only if `revealed`
    (`disclosure.deal_revealed`)."""
    m = detail.match
    out = match_summary(m)
    out["round_scores"] = detail.round_scores or []
    out["faults"] = [
        {"seat": f.seat, "bot": f.bot_name, "kind": f.kind.value, "detail": f.detail,
         "turn": f.turn_id, "at": iso(f.created_at)} for f in detail.faults]
    out["revealed"] = revealed
    out["seed"] = str(m.seed) if revealed else None
    out["log"] = f"/api/matches/{m.id}/log" if revealed and detail.log_sha256 else None
    out["luck"] = luck if revealed else None
    return out


def luck_json(seats: Sequence[SeatInfo], log: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Per seat of a finished match: the luck of its draws in points (positive: they
    saved it points) and its luck-adjusted total, as `cfarena sprt` scores them
    (`sprt.luck`); None if the log does not replay. The luck is computed from the
    boneyard: hidden while any match of the deal may still be played."""
    ordered = sorted(seats, key=lambda s: s.seat)
    if any(s.total is None for s in ordered):
        return None
    try:
        lucks = seat_luck([s.total or 0 for s in ordered], log)
    except ValueError:  # gamelog.LogError, an illegal move: a damaged log
        return None
    return [{"seat": s.seat, "luck": round(c, 1), "adjusted": round(a, 1)}
            for s, (c, a) in zip(ordered, lucks, strict=True)]


@dataclass
class _Cached:
    key: tuple[str, int]
    at: float
    value: list[dict[str, Any]]


def _leaderboard_row(r: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard row as the page and the API show it (`schemas.LeaderboardRow`)."""
    return {
        "rank": r["rank"], "bot": r["bot"], "version": r["version"],
        "versions": r["versions"], "rating": r["rating"], "score": r["score"],
        "mu": r["mu"], "sigma": r["sigma"], "check_rank": r["check_rank"],
        "interval": (None if r["ci_low"] is None
                     else [round(r["ci_low"]), round(r["ci_high"])]),
        "bt_rating": None if r["bt_elo"] is None else round(r["bt_elo"]),
        "games": r["games"], "matches": r["matches"], "win_share": r["win_share"],
        "points_per_round": r["points_per_round"], "faults": r["faults"],
        "revoked": r["revoked"], "connected": r["connected"],
        "waiting_for": r["waiting_for"], "last_seen": r["last_seen"],
        "last_error": r["last_error"],
    }


class WebData:
    """The database reads behind the pages and the API (each call: a few queries)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._leaderboard: dict[str, _Cached] = {}
        self._replay_pages: _Latest[str] = _Latest(REPLAYS_KEPT)
        self._luck_kept: _Latest[list[dict[str, Any]] | None] = _Latest(LUCK_KEPT)

    # ------------------------------------------------------------ leaderboard
    def leaderboard(self, pool: str, connected: Collection[str] | None = None,
                    players: int | None = None) -> dict[str, Any]:
        """The leaderboard of `pool` (`standings.leaderboard_rows`: latest version of
        each bot, ranked by the online rating) with each bot's presence
        (`standings.with_presence`: `connected` are the bots dialled in now, None if
        not known; a table seats `players`); the ratings are recomputed when a match
        has finished since, at most every 2 s, the presence on every call."""
        finished = self.db.finished_count(pool)
        revoked = {b.name for b in self.db.list_bots() if b.revoked_at is not None}
        if finished == 0:  # no such pool (yet): not kept, so that made-up pool names
            rows = leaderboard_rows(self.db, pool)  # cannot fill the memory
        else:
            with self._lock:  # one computation at a time; the others wait and share it
                cached = self._leaderboard.get(pool)
                now = time.monotonic()
                if cached is None or (cached.key != (pool, finished)
                                      and now - cached.at >= LEADERBOARD_TTL_S):
                    cached = _Cached((pool, finished), now, leaderboard_rows(self.db, pool))
                    self._leaderboard[pool] = cached
                rows = cached.value  # at most LEADERBOARD_TTL_S old; the count is today's
        return {"pool": pool, "finished": finished,
                "rows": [_leaderboard_row(r) for r in with_presence(rows, revoked, connected,
                                                                    players)]}

    # ------------------------------------------------------------------- bots
    def bot(self, name: str, pool: str) -> dict[str, Any]:
        """A bot's page: versions (ratings, latency), its rating after each of its
        latest `RATING_POINTS` rated matches, recent matches and faults. NotFound if
        there is no such bot."""
        if self.db.bot_by_name(name) is None:
            raise NotFound(f"no bot named {name!r}")
        try:
            report = bot_report(self.db, name, pool, FAULTS_SHOWN)
        except StorageError as exc:  # removed meanwhile
            raise NotFound(str(exc)) from None
        rated = rated_games(self.db, name, pool)
        for version in report["versions"]:
            version["rated"] = rated.get(version["version"], 0)
        recent = [match_summary(m) for m in self.db.list_matches(bot=name, limit=RECENT_MATCHES)]
        return {"bot": name, "pool": pool, "versions": report["versions"],
                "faults": report["faults"],
                "rating_history": rating_history(self.db, name, pool, RATING_POINTS),
                "recent_matches": recent}

    # ---------------------------------------------------------------- matches
    def matches(self, bot: str | None, status: MatchStatus | None, limit: int
                ) -> list[dict[str, Any]]:
        return [match_summary(m) for m in self.db.list_matches(None, bot, status, limit)]

    def match(self, match_id: str) -> dict[str, Any]:
        """One match (see `match_json`); NotFound if there is none."""
        detail = self.db.get_match(match_id)
        if detail is None:
            raise NotFound(f"no match {match_id!r}")
        revealed = deal_revealed(self.db.same_deal(match_id))
        finished = detail.match.status is MatchStatus.FINISHED
        return match_json(detail, revealed, self._luck(detail) if revealed and finished
                          else None)

    def _luck(self, detail: MatchDetail) -> list[dict[str, Any]] | None:
        """`luck_json` of a finished match, kept for the latest `LUCK_KEPT` matches: a
        replay of its whole log (~0.4 MB for a full 4-player match) in the web's threads
        would otherwise run on every view, beside the referee's loop. None if its log is
        missing or damaged."""
        match_id = detail.match.id
        kept, luck = self._luck_kept.get(match_id)
        if kept:
            return luck
        try:
            log = self.db.get_log(match_id)
        except StorageError:  # a log whose digest does not match: shown without luck
            log = None
        luck = None if log is None else luck_json(detail.match.seats, log)
        self._luck_kept.put(match_id, luck)
        return luck

    def log(self, match_id: str) -> dict[str, Any] | None:
        """The game log of a match whose deal is over everywhere; None while it may
        not be shown; NotFound if there is no such match or no log."""
        deal = self.db.same_deal(match_id)
        if not deal:
            raise NotFound(f"no match {match_id!r}")
        if not deal_revealed(deal):
            return None
        log = self.db.get_log(match_id)
        if log is None:
            raise NotFound(f"no game log for match {match_id!r}")
        return log

    def replay_html(self, match_id: str) -> str | None:
        """The replay viewer of a match whose deal is over (None while it may not be
        shown; NotFound as `log`). The rendering (~100 ms) is kept for the latest
        `REPLAYS_KEPT` matches; whether it may be shown is asked every time (a deal
        dealt again later, by a rerun tournament, hides it again)."""
        deal = self.db.same_deal(match_id)
        if not deal:
            raise NotFound(f"no match {match_id!r}")
        if not deal_revealed(deal):
            return None
        kept, page = self._replay_pages.get(match_id)
        if kept and page is not None:
            return page
        log = self.db.get_log(match_id)
        if log is None:
            raise NotFound(f"no game log for match {match_id!r}")
        from cfarena.server.replay.html import render_html

        page = render_html(log)
        self._replay_pages.put(match_id, page)
        return page

    def status(self, match_id: str) -> MatchStatus | None:
        found = [st for i, _t, st, _log in self.db.same_deal(match_id) if i == match_id]
        return found[0] if found else None

    def running(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.matches(None, MatchStatus.RUNNING, limit)


def round_rows(detail: dict[str, Any]) -> list[list[int]]:
    """Scores by round, as stored (rows: rounds; columns: seats)."""
    rows: Sequence[Sequence[int]] = detail.get("round_scores") or []
    return [list(r) for r in rows]
