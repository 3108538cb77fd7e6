"""The storage facade: `open_database(url)` and the `Database` methods the referee and CLI use.

Each method is one short transaction; what writes a schedule is in
`scheduling`, what records a played match in `match_recording`, the read queries in
`queries`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from cfarena.server.database_url import DEFAULT_URL
from cfarena.server.storage import match_recording, queries, scheduling
from cfarena.server.storage.arena_fleet import FleetStore
from cfarena.server.storage.arena_store import ArenaStore
from cfarena.server.storage.connect import (
    SQLITE_BEGIN,
    StorageError,
    check_current,
    is_read_only,
    make_engine,
    one_line,
    upgrade,
)
from cfarena.server.storage.encoding import canonical_sha256, config_hash, storable_text, utc_now
from cfarena.server.storage.models import (
    Bot,
    GameLog,
    Match,
    MatchStatus,
    Tournament,
    TournamentStatus,
)
from cfarena.server.storage.queries import GLOBAL_POOL
from cfarena.server.storage.scheduling import same_tournament
from cfarena.server.storage.values import (
    BotInfo,
    MatchDetail,
    MatchInfo,
    MatchPlan,
    RatingPoint,
    ScheduledMatch,
    SeatLog,
    Standing,
    StoredMatch,
    TournamentInfo,
)

_HASH = re.compile(r"[0-9a-f]{64}")
_PENDING = (MatchStatus.SCHEDULED, MatchStatus.RUNNING, MatchStatus.ABORTED)


def open_database(url: str = DEFAULT_URL, *, create: bool = True) -> Database:
    """Open (creating or upgrading the schema to the latest migration) the database at `url`.

    With `create=False` (commands that only read) the database must exist
    already: a SQLite file that does not is refused ("no database at PATH")
    without being created, and so is a database without cfarena's tables; a
    PostgreSQL server refuses a database that does not exist by itself.

    Raises `StorageError` with a one-line message when the URL is invalid or the
    database cannot be reached or migrated.
    """
    engine = make_engine(url, create=create)
    try:
        if is_read_only(engine):  # a read of a database it cannot write: no migration
            check_current(engine)
        else:
            upgrade(engine, create=create)
    except StorageError:
        engine.dispose()
        raise
    except (SQLAlchemyError, OSError) as exc:
        engine.dispose()
        shown = engine.url.render_as_string(hide_password=True)
        raise StorageError(f"cannot open database {shown}: {one_line(exc)}") from exc
    return Database(engine)


class Database(ArenaStore, FleetStore):
    """Synchronous facade over one database; every method is one short transaction.

    The competition arena's calls (token rotation and revocation, online ratings,
    versions, a bot's faults and latency) are in `arena_store.ArenaStore`; those of
    several arenas on one database (heartbeats, capacity across them) in
    `arena_fleet.FleetStore`.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._reader = sessionmaker(engine, expire_on_commit=False)
        # SQLite writers take the write lock up front (BEGIN IMMEDIATE): no
        # read-then-upgrade deadlocks between processes, the busy timeout applies.
        writer = engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
        self._writer = sessionmaker(writer, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[Session]:
        maker = self._writer if write else self._reader
        try:
            with maker() as session, session.begin():
                yield session
        except DBAPIError as exc:
            raise StorageError(f"database error: {one_line(exc)}") from exc

    # -- bots ---------------------------------------------------------------

    def ensure_bot(self, name: str, token_hash: str, command: str | None = None) -> int:
        """The id of bot `name`, registering it on first use.

        An existing bot must present the same token hash (else `StorageError`);
        a given `command` replaces the stored one.
        """
        return self._upsert_bot(name, token_hash, command, replace_token=False)

    def register_local_bot(self, name: str, token_hash: str, command: str | None = None) -> int:
        """Like `ensure_bot`, but a new token hash replaces the stored one.

        For locally spawned bots: every `cfarena run-tournament` issues fresh
        tokens to the processes it starts, so the latest one is what counts.
        """
        return self._upsert_bot(name, token_hash, command, replace_token=True)

    def _upsert_bot(
        self, name: str, token_hash: str, command: str | None, *, replace_token: bool
    ) -> int:
        if not _HASH.fullmatch(token_hash):
            raise ValueError("token_hash must be a sha256 hex digest (see hash_token)")
        with self._session(write=True) as s:
            bot = s.scalars(select(Bot).where(Bot.name == name)).one_or_none()
            if bot is None:
                bot = Bot(name=name, token_hash=token_hash, command=command, created_at=utc_now())
                s.add(bot)
                s.flush()
                return bot.id
            if bot.token_hash != token_hash:
                if not replace_token:
                    raise StorageError(f"bot {name!r} is registered with a different token")
                bot.token_hash = token_hash
            if command is not None:
                bot.command = command
            return bot.id

    def bot_by_token_hash(self, token_hash: str) -> BotInfo | None:
        """The bot this token hash admits (None: unknown, or the bot is revoked)."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.token_hash == token_hash,
                                              Bot.revoked_at.is_(None))).one_or_none()
            return None if bot is None else queries.bot_info(bot)

    def list_bots(self) -> list[BotInfo]:
        with self._session() as s:
            return [queries.bot_info(b) for b in s.scalars(select(Bot).order_by(Bot.name))]

    # -- tournaments --------------------------------------------------------

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

    # -- schedule -----------------------------------------------------------

    def schedule_matches(self, tournament_id: int | None, plans: Iterable[MatchPlan]) -> list[str]:
        """Store the matches not stored yet (by key) and return all their ids, in plan order.

        Match ids are `T<tournament>-<key>`, or the key itself for a match outside
        any tournament. A key already stored with a different seed, table or
        seating is an error (the schedule changed under the same key).
        """
        plans = list(plans)
        for plan in plans:
            scheduling.check_plan(plan)
        with self._session(write=True) as s:
            return scheduling.schedule_matches(s, tournament_id, plans)

    def pending_matches(self, tournament_id: int) -> list[ScheduledMatch]:
        """Matches still to play, in schedule order: scheduled, aborted, and running ones
        (a match left running by a crashed referee is played again)."""
        with self._session() as s:
            return queries.scheduled(s, tournament_id, [m.value for m in _PENDING])

    def pending_match(self, tournament_id: int, match_id: str) -> ScheduledMatch | None:
        """One match of `pending_matches` (None once it is finished, or if it is not one of
        the tournament's): what a queue worker plays for a job."""
        with self._session() as s:
            found = queries.scheduled(s, tournament_id, [m.value for m in _PENDING],
                                      match_id=match_id)
        return found[0] if found else None

    def finished_keys(self, tournament_id: int) -> set[str]:
        with self._session() as s:
            return set(s.scalars(select(Match.key).where(
                Match.tournament_id == tournament_id,
                Match.status == MatchStatus.FINISHED.value,
            )))

    def mark_running(self, match_id: str, *, fresh: bool = False) -> str:
        """Mark a match that is not finished running, and return its new lease: the
        fencing token its record must carry (`StoredMatch.lease`) to be stored. Any
        earlier holder's lease is void from now on (its copy will not be stored).

        `fresh`: only a match still `scheduled` (an arena's own new match); one that
        another arena aborted meanwhile is `LeaseLost`."""
        lease = secrets.token_hex(16)
        startable = (Match.status == MatchStatus.SCHEDULED.value if fresh
                     else Match.status != MatchStatus.FINISHED.value)
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, startable)
                .values(status=MatchStatus.RUNNING.value, started_at=utc_now(), lease=lease)
            )
            if getattr(done, "rowcount", 0) != 1:
                m = s.get(Match, match_id)
                if fresh and m is not None and m.status == MatchStatus.ABORTED.value:
                    raise match_recording.LeaseLost(f"match {match_id}: aborted elsewhere before "
                                                    f"it started ({m.reason}); not played")
                state = "unknown" if m is None else m.status
                raise StorageError(f"cannot start match {match_id!r}: {state}")
        return lease

    def revoke_lease(self, match_id: str) -> bool:
        """Void the lease of a match still running (its player is taken for dead and the
        match goes to another): whatever the old holder plays is not stored. Whether
        there was one to void."""
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.status == MatchStatus.RUNNING.value,
                       Match.lease.is_not(None))
                .values(lease=None)
            )
            return bool(getattr(done, "rowcount", 0))

    def abort_running_matches(self, reason: str, tournament_id: int | None = None) -> int:
        """Mark the matches still `running` of a tournament (None: those outside any
        tournament) as `aborted` with `reason`; returns how many.

        For a referee starting again after it was killed: nothing will ever finish
        the matches it was running (their leases are revoked: a referee that was only
        frozen, not killed, stores nothing of them). Results, seats and logs are left as they are
        (a running match has none); recording the match later still works (an
        aborted match is recorded afresh).
        """
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(same_tournament(tournament_id),
                       Match.status == MatchStatus.RUNNING.value)
                .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                        finished_at=utc_now(), lease=None)
            )
            return int(getattr(done, "rowcount", 0) or 0)

    def abort_unplayed(self, match_id: str, reason: str) -> bool:
        """Mark match `match_id` `aborted` with `reason` if it is scheduled or running
        (its queue job failed for good: nothing will play it until it is queued again);
        False if it is finished or aborted already."""
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.status.in_(
                    [MatchStatus.SCHEDULED.value, MatchStatus.RUNNING.value]))
                .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                        finished_at=utc_now())
            )
            return bool(getattr(done, "rowcount", 0))

    # -- results ------------------------------------------------------------

    def record_match(self, record: StoredMatch) -> bool:
        """Store a played match, all or nothing, and rate it; False if it was already finished.

        A record with a lease (`StoredMatch.lease`) is stored only if the match still
        holds that lease: else `LeaseLost` (nothing is stored; another process holds
        the match, or it was aborted while this one was silent).

        One transaction writes the result (status finished, or aborted with
        its reason), the seats, the faults, the seat logs, the game log with
        its sha256 and, for a finished match, the Elo update of every seat in
        the match's pool and in "global" with rating history rows. A match that
        is already finished is left alone (the call is a no-op returning
        False), so a retried or duplicated recording never rates a match twice.
        A match recorded before as aborted (or one replayed from its seed) is
        recorded afresh: the faults, seat logs and game log of the earlier
        attempt are replaced by this record's, not added to.
        """
        status = match_recording.recorded_status(record)
        with self._session(write=True) as s:
            return match_recording.record_match(s, record, status)

    # -- queries ------------------------------------------------------------

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
