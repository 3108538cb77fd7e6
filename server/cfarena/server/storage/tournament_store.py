"""Tournaments in storage: created, found again (resume), their progress, status and
the defences their machines gave."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select

from cfarena.server.storage import queries
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import config_hash, utc_now
from cfarena.server.storage.models import Match, Tournament, TournamentStatus
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.values import TournamentInfo


class TournamentStore(Sessions):
    """The tournaments' calls of `Database` (see the module docstring)."""

    def create_tournament(self, name: str, config: Mapping[str, Any],
                          identity: Mapping[str, Any] | None = None) -> int:
        """A new running tournament; it is found again (resume) by the hash of
        `identity`, by default the config itself (a config may hold values, such
        as a drawn seed, that a rerun of the same command cannot know)."""
        digest = config_hash(config if identity is None else identity)
        with self._session(write=True) as s:
            t = Tournament(name=name, config=dict(config), config_hash=digest,
                           status=TournamentStatus.RUNNING.value, created_at=utc_now())
            s.add(t)
            s.flush()
            return t.id

    def find_tournament(self, config_hash: str, *, unfinished_only: bool = False
                        ) -> TournamentInfo | None:
        """The newest tournament with this config hash (only a running or interrupted one
        with `unfinished_only`)."""
        with self._session() as s:
            query = select(Tournament).where(Tournament.config_hash == config_hash)
            if unfinished_only:
                query = query.where(Tournament.status != TournamentStatus.FINISHED.value)
            t = s.scalars(
                query.order_by(Tournament.id.desc())
                .limit(1)
            ).one_or_none()
            return None if t is None else queries.tournament_info(t)

    def get_tournament(self, tournament_id: int) -> TournamentInfo | None:
        with self._session() as s:
            t = s.get(Tournament, tournament_id)
            return None if t is None else queries.tournament_info(t)

    def list_tournaments(self) -> list[TournamentInfo]:
        with self._session() as s:
            rows = s.scalars(select(Tournament).order_by(Tournament.id))
            return [queries.tournament_info(t) for t in rows]

    def match_counts(self, tournament_id: int) -> dict[str, int]:
        """How many of the tournament's matches are in each status (its progress)."""
        with self._session() as s:
            rows = s.execute(select(Match.status, func.count()).where(
                Match.tournament_id == tournament_id).group_by(Match.status))
            return {str(status): int(n) for status, n in rows}

    def weaken_tournament_defences(self, tournament_id: int, held: Mapping[str, bool]) -> None:
        """Record in the tournament's stored config (`defences`) that a machine playing
        it did not give a defence: a defence stays true only while every machine gave it."""
        with self._session(write=True) as s:
            t = s.get(Tournament, tournament_id)
            if t is None:
                raise StorageError(f"no tournament {tournament_id}")
            stored = dict(t.config.get("defences") or {})
            merged = {**stored, **{key: bool(stored.get(key, True)) and value
                                   for key, value in held.items()}}
            if merged != stored:
                t.config = {**t.config, "defences": merged}

    def set_tournament_status(self, tournament_id: int, status: TournamentStatus | str) -> None:
        value = TournamentStatus(status)
        with self._session(write=True) as s:
            t = s.get(Tournament, tournament_id)
            if t is None:
                raise StorageError(f"no tournament {tournament_id}")
            t.status = value.value
            t.finished_at = utc_now() if value is TournamentStatus.FINISHED else None
