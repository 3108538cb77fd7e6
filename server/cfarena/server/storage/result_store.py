"""What was played, read from storage: standings, matches (a list, one in detail), a
match's game log and seat logs, the results a rating fit needs, a bot's rating
history. The queries themselves are in `queries`."""

from __future__ import annotations

from typing import Any

from cfarena.server.storage import queries
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import canonical_sha256
from cfarena.server.storage.models import GameLog, MatchStatus
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

    def get_match(self, match_id: str) -> MatchDetail | None:
        with self._session() as s:
            return queries.match_detail(s, match_id)

    def get_log(self, match_id: str) -> dict[str, Any] | None:
        """The stored game log of a match (None if none); `StorageError` if its hash mismatches."""
        with self._session() as s:
            row = s.get(GameLog, match_id)
            if row is None:
                return None
            if canonical_sha256(row.log) != row.sha256:
                raise StorageError(f"game log of match {match_id!r} is corrupt (sha256 mismatch)")
            return row.log

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
