"""What was played, read from storage: standings, matches (a list, one in detail; a
match by the id its bots were given), a match's game log (or every log of a tournament,
streamed) and seat logs, the results a rating fit needs, a bot's rating history. The
queries themselves are in `queries`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select

from cfarena.match.bot_ids import WIRE_ID, wire_match_id
from cfarena.server.storage import queries
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import canonical_sha256
from cfarena.server.storage.models import GameLog, Match, MatchSeat, MatchStatus
from cfarena.server.storage.queries import GLOBAL_POOL
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.values import (
    MatchDetail,
    MatchInfo,
    RatingPoint,
    SeatLog,
    Standing,
)


class ResultStore(Sessions):
    """The reads of `Database` about what was played (see the module docstring)."""

    def standings(self, tournament_id: int | None = None, pool: str | None = None
                  ) -> list[Standing]:
        """Per bot: Elo, matches, wins, mean score per round, faults; best Elo first.

        Without a tournament the Elo is the stored rating of `pool` ("global" by
        default). For a tournament it is the Elo replayed over that tournament's
        finished matches in finishing order, from 1500 (a tournament-local Elo).
        `pool` also restricts the counted matches to that pool.
        """
        with self._session() as s:
            return queries.standings(s, tournament_id, pool)

    def list_matches(self, tournament_id: int | None = None, bot: str | int | None = None,
                     status: MatchStatus | str | None = None, limit: int | None = 100
                     ) -> list[MatchInfo]:
        """Matches, newest first, optionally of one tournament, bot (name or id) or status."""
        with self._session() as s:
            return queries.list_matches(
                s, tournament_id, bot, None if status is None else MatchStatus(status), limit)

    def logged_matches_after(self, bot_id: int, after: str | None, limit: int
                             ) -> list[MatchInfo] | None:
        """A page of bot `bot_id`'s matches with a stored game log, in the order they
        ended (`queries.logged_matches_after`): those after its match `after` (None: from
        the first), at most `limit`; None if `after` is not one of its matches (a page's
        end is the next one's start)."""
        with self._session() as s:
            return queries.logged_matches_after(s, bot_id, after, limit)

    def seeds_of(self, statuses: tuple[MatchStatus, ...]) -> set[int]:
        """The seeds of every match in one of `statuses` (one column read: what a
        disclosure check needs, without the matches' seats)."""
        with self._session() as s:
            return set(s.scalars(select(Match.seed).where(
                Match.status.in_([status.value for status in statuses])).distinct()))

    def get_match(self, match_id: str) -> MatchDetail | None:
        with self._session() as s:
            return queries.match_detail(s, match_id)

    def match_ids_given(self, given: str, bot_id: int | None = None) -> list[str]:
        """The stored ids of the matches whose bots were given `given` as their id (what
        a bot logs: a tournament match's opaque `bot_ids.wire_match_id`, a ladder
        match's stored id), with `bot_id` only those it held a seat in. A stored id is
        found as it is; else each tournament match's bot id is made from its seed and
        key (about a microsecond each; with `bot_id`, only that bot's matches). Two
        tournaments dealt from the same seed give their matches the same bot ids: all
        are returned, by stored id."""
        with self._session() as s:
            query = select(Match.id, Match.seed, Match.key)
            if bot_id is not None:
                query = query.where(Match.id.in_(select(MatchSeat.match_id).where(
                    MatchSeat.bot_id == bot_id)))
            stored = s.execute(query.where(Match.id == given)).first()
            if stored is not None:
                return [given]
            if not WIRE_ID.fullmatch(given):
                return []
            rows = s.execute(query.where(Match.tournament_id.is_not(None))
                             .order_by(Match.id).execution_options(yield_per=1000))
            return [match_id for match_id, seed, key in rows
                    if wire_match_id(seed, key) == given]

    def get_log(self, match_id: str) -> dict[str, Any] | None:
        """The stored game log of a match (None if none); `StorageError` if its hash mismatches."""
        with self._session() as s:
            row = s.get(GameLog, match_id)
            if row is None:
                return None
            corrupt = _corrupt(match_id, row.log, row.sha256)
            if corrupt is not None:
                raise corrupt
            return row.log

    def game_log_count(self, tournament_id: int | None = None) -> int:
        """How many matches (of one tournament, or of all) have a stored game log."""
        query = select(func.count()).select_from(GameLog)
        if tournament_id is not None:
            query = query.join(Match, Match.id == GameLog.match_id).where(
                Match.tournament_id == tournament_id)
        with self._session() as s:
            return s.scalar(query) or 0

    def game_logs(self, tournament_id: int | None = None, batch: int = 100
                  ) -> Iterator[tuple[str, dict[str, Any] | StorageError]]:
        """(match id, its game log) of every match with one (of a tournament, or all), by
        match id; in place of a log whose sha256 mismatches, the `StorageError` `get_log`
        would raise. Rows are read `batch` at a time, each batch a short transaction of
        its own (a long export never holds the database): never all logs in memory."""
        after = ""
        while True:
            query = select(GameLog.match_id, GameLog.log, GameLog.sha256).where(
                GameLog.match_id > after).order_by(GameLog.match_id).limit(batch)
            if tournament_id is not None:
                query = query.join(Match, Match.id == GameLog.match_id).where(
                    Match.tournament_id == tournament_id)
            with self._session() as s:
                rows = s.execute(query).all()
            for match_id, log, sha256 in rows:
                yield match_id, _corrupt(match_id, log, sha256) or log
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def seat_logs(self, match_id: str) -> list[SeatLog]:
        """The captured output of each seat's bot process in a match, by seat ([] if none)."""
        with self._session() as s:
            return queries.seat_logs(s, match_id)

    def results_for_fit(self, tournament_id: int | None = None, pool: str | None = None
                        ) -> list[list[tuple[int, int]]]:
        """(bot id, rank) per seat of every finished match, in finishing order."""
        with self._session() as s:
            return queries.results(s, tournament_id, pool)

    def results_by_deal(self, tournament_id: int | None = None, pool: str | None = None
                        ) -> list[tuple[int, list[tuple[int, int]]]]:
        """(deal seed, (bot id, rank) per seat) of every finished match, in finishing
        order: the matches of one seed are the rotations of one deal."""
        with self._session() as s:
            return queries.deal_results(s, tournament_id, pool)

    def rating_history(self, bot: str | int, pool: str = GLOBAL_POOL) -> list[RatingPoint]:
        with self._session() as s:
            return queries.rating_history(s, bot, pool)


def _corrupt(match_id: str, log: Any, sha256: str) -> StorageError | None:
    """The error of a stored game log whose digest is not the one stored with it."""
    if canonical_sha256(log) == sha256:
        return None
    return StorageError(f"game log of match {match_id!r} is corrupt (sha256 mismatch)")
