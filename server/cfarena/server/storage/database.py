"""The storage facade: `open_database(url)` and the `Database` methods the referee and CLI use."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from cfarena.server.ratings import INITIAL_ELO, elo_update
from cfarena.server.storage import queries
from cfarena.server.storage.arena_store import ArenaStore, rate_skill
from cfarena.server.storage.connect import (
    DEFAULT_URL,
    SQLITE_BEGIN,
    StorageError,
    make_engine,
    one_line,
    upgrade,
)
from cfarena.server.storage.models import (
    Bot,
    Fault,
    FaultKind,
    GameLog,
    Match,
    MatchSeat,
    MatchStatus,
    Rating,
    RatingHistory,
    SeatLogRow,
    Tournament,
    TournamentStatus,
)
from cfarena.server.storage.records import (
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

GLOBAL_POOL = "global"
_HASH = re.compile(r"[0-9a-f]{64}")
_INT64 = 2**63
_PENDING = (MatchStatus.SCHEDULED, MatchStatus.RUNNING, MatchStatus.ABORTED)


def canonical_json(value: Any) -> str:
    """Key-sorted compact JSON, the form hashed for configs and game logs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def config_hash(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


def default_pool(rules: Mapping[str, Any], players: int) -> str:
    return f"{rules.get('preset', 'custom')}/{players}p"


def _now() -> datetime:
    return datetime.now(UTC)


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
        upgrade(engine, create=create)
    except StorageError:
        engine.dispose()
        raise
    except (SQLAlchemyError, OSError) as exc:
        engine.dispose()
        shown = engine.url.render_as_string(hide_password=True)
        raise StorageError(f"cannot open database {shown}: {one_line(exc)}") from exc
    return Database(engine)


class Database(ArenaStore):
    """Synchronous facade over one database; every method is one short transaction.

    The competition arena's calls (token rotation and revocation, online ratings,
    versions, a bot's faults and latency) are in `arena_store.ArenaStore`.
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
                bot = Bot(name=name, token_hash=token_hash, command=command, created_at=_now())
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
                           status=TournamentStatus.RUNNING.value, created_at=_now())
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

    def set_tournament_status(self, tournament_id: int, status: TournamentStatus | str) -> None:
        value = TournamentStatus(status)
        with self._session(write=True) as s:
            t = s.get(Tournament, tournament_id)
            if t is None:
                raise StorageError(f"no tournament {tournament_id}")
            t.status = value.value
            t.finished_at = _now() if value is TournamentStatus.FINISHED else None

    # -- schedule -----------------------------------------------------------

    def schedule_matches(self, tournament_id: int | None, plans: Iterable[MatchPlan]) -> list[str]:
        """Store the matches not stored yet (by key) and return all their ids, in plan order.

        Match ids are `T<tournament>-<key>`, or the key itself for a match outside
        any tournament. A key already stored with a different seed, table or
        seating is an error (the schedule changed under the same key).
        """
        plans = list(plans)
        for plan in plans:
            _check_plan(plan)
        with self._session(write=True) as s:
            if tournament_id is not None and s.get(Tournament, tournament_id) is None:
                raise StorageError(f"no tournament {tournament_id}")
            ordinal = s.scalar(
                select(func.max(Match.ordinal)).where(_same_tournament(tournament_id))
            )
            ordinal = -1 if ordinal is None else ordinal
            ids: list[str] = []
            for plan in plans:
                match_id = plan.key if tournament_id is None else f"T{tournament_id}-{plan.key}"
                existing = s.get(Match, match_id)
                if existing is not None:
                    _check_same(s, existing, tournament_id, plan)
                    ids.append(match_id)
                    continue
                ordinal += 1
                s.add(Match(
                    id=match_id, tournament_id=tournament_id, key=plan.key, ordinal=ordinal,
                    pool=plan.pool or default_pool(plan.rules, plan.players), seed=plan.seed,
                    rules=dict(plan.rules), players=plan.players,
                    status=MatchStatus.SCHEDULED.value, created_at=_now(),
                ))
                s.flush()
                versions = list(plan.seat_versions) or [""] * plan.players
                s.add_all(
                    MatchSeat(match_id=match_id, seat=seat, bot_id=bot_id, forfeited=False,
                              faults=0, bot_version=versions[seat])
                    for seat, bot_id in enumerate(plan.seat_bot_ids)
                )
                s.flush()
                ids.append(match_id)
            return ids

    def pending_matches(self, tournament_id: int) -> list[ScheduledMatch]:
        """Matches still to play, in schedule order: scheduled, aborted, and running ones
        (a match left running by a crashed referee is played again)."""
        with self._session() as s:
            return queries.scheduled(s, tournament_id, [m.value for m in _PENDING])

    def finished_keys(self, tournament_id: int) -> set[str]:
        with self._session() as s:
            return set(s.scalars(select(Match.key).where(
                Match.tournament_id == tournament_id,
                Match.status == MatchStatus.FINISHED.value,
            )))

    def mark_running(self, match_id: str) -> None:
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.status != MatchStatus.FINISHED.value)
                .values(status=MatchStatus.RUNNING.value, started_at=_now())
            )
            if getattr(done, "rowcount", 0) != 1:
                state = "finished" if s.get(Match, match_id) else "unknown"
                raise StorageError(f"cannot start match {match_id!r}: {state}")

    def abort_running_matches(self, reason: str, tournament_id: int | None = None) -> int:
        """Mark the matches still `running` of a tournament (None: those outside any
        tournament) as `aborted` with `reason`; returns how many.

        For a referee starting again after it was killed: nothing will ever finish
        the matches it was running. Results, seats and logs are left as they are
        (a running match has none); recording the match later still works (an
        aborted match is recorded afresh).
        """
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(_same_tournament(tournament_id),
                       Match.status == MatchStatus.RUNNING.value)
                .values(status=MatchStatus.ABORTED.value, reason=_storable_text(reason),
                        finished_at=_now())
            )
            return int(getattr(done, "rowcount", 0) or 0)

    # -- results ------------------------------------------------------------

    def record_match(self, record: StoredMatch) -> bool:
        """Store a played match, all or nothing, and rate it; False if it was already finished.

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
        status = MatchStatus(record.status)
        if status not in (MatchStatus.FINISHED, MatchStatus.ABORTED):
            raise ValueError(f"a match is recorded as finished or aborted, not {status.value}")
        with self._session(write=True) as s:
            m = s.get(Match, record.match_id, with_for_update=True)
            if m is None:
                raise StorageError(f"no match {record.match_id!r} (schedule it first)")
            if m.status == MatchStatus.FINISHED.value:
                return False
            finished = status is MatchStatus.FINISHED
            if finished:
                _check_result(record, m.players)
            _check_seat_logs(record, m.players)
            # rows of an earlier (aborted) attempt of this match: this attempt replaces them
            for table in (Fault, SeatLogRow, GameLog):
                s.execute(delete(table).where(table.match_id == m.id))
            now = record.finished_at or _now()
            m.status = status.value
            m.reason = None if record.reason is None else _storable_text(record.reason)
            m.round_scores = [list(r) for r in record.round_scores] if finished else None
            m.totals = list(record.totals) if finished else None
            m.ranks = list(record.ranks) if finished else None
            m.rounds = len(record.round_scores) if finished else None
            m.finished_at = now
            m.duration_s = record.duration_s
            if m.duration_s is None and m.started_at is not None:
                m.duration_s = (now - queries.aware(m.started_at)).total_seconds()
            s.flush()

            seats = {x.seat: x for x in s.scalars(
                select(MatchSeat).where(MatchSeat.match_id == m.id).order_by(MatchSeat.seat))}
            fault_counts: dict[int, int] = {}
            for f in record.faults:
                fault_counts[f.seat] = fault_counts.get(f.seat, 0) + 1
            for seat, row in seats.items():
                row.total = record.totals[seat] if finished else None
                row.rank = record.ranks[seat] if finished else None
                row.forfeited = seat in record.forfeited
                row.faults = fault_counts.get(seat, 0)
            s.flush()

            for f in record.faults:
                seat_row = seats.get(f.seat)
                s.add(Fault(
                    match_id=m.id, seat=f.seat,
                    bot_id=seat_row.bot_id if seat_row is not None else None,
                    kind=_fault_kind(f.kind), detail=_storable_text(f.detail), at_turn=f.at_turn,
                    created_at=now,
                ))
            s.flush()

            s.add_all(
                SeatLogRow(match_id=m.id, seat=x.seat, output=_storable_text(x.output),
                           output_bytes=x.output_bytes,
                           exit=None if x.exit is None else _storable_text(x.exit))
                for x in record.seat_logs
            )
            s.flush()

            if record.log is not None:
                _store_log(s, m.id, record.log, record.log_format)

            if finished:
                ranks = [(seats[i].bot_id, record.ranks[i]) for i in sorted(seats)]
                entrants = [((seats[i].bot_id, seats[i].bot_version), record.ranks[i])
                            for i in sorted(seats)]
                for pool in dict.fromkeys((m.pool, GLOBAL_POOL)):
                    _rate(s, m.id, pool, ranks, now)
                    rate_skill(s, pool, entrants, now)
            return True

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
            digest = hashlib.sha256(canonical_json(row.log).encode("utf-8")).hexdigest()
            if digest != row.sha256:
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

    def rating_history(self, bot: str | int, pool: str = GLOBAL_POOL) -> list[RatingPoint]:
        with self._session() as s:
            return queries.rating_history(s, bot, pool)


# -- helpers ----------------------------------------------------------------


def _same_tournament(tournament_id: int | None) -> Any:
    if tournament_id is None:
        return Match.tournament_id.is_(None)
    return Match.tournament_id == tournament_id


def _fault_kind(kind: FaultKind | str) -> str:
    return kind.value if isinstance(kind, FaultKind) else FaultKind(kind).value


def _check_plan(plan: MatchPlan) -> None:
    if not plan.key:
        raise ValueError("a match plan needs a key")
    if plan.players < 2 or len(plan.seat_bot_ids) != plan.players:
        raise ValueError(f"match {plan.key!r}: {plan.players} players but seats "
                         f"{list(plan.seat_bot_ids)}")
    if plan.seat_versions and (len(plan.seat_versions) != plan.players
                               or any(len(v) > 64 for v in plan.seat_versions)):
        raise ValueError(f"match {plan.key!r}: seat versions {list(plan.seat_versions)} "
                         f"(one per seat, at most 64 characters)")
    if not -_INT64 <= plan.seed < _INT64:
        raise ValueError(f"match {plan.key!r}: seed {plan.seed} does not fit 64 bits")


def _check_same(s: Session, m: Match, tournament_id: int | None, plan: MatchPlan) -> None:
    seating = list(s.scalars(
        select(MatchSeat.bot_id).where(MatchSeat.match_id == m.id).order_by(MatchSeat.seat)))
    if (m.tournament_id != tournament_id or m.seed != plan.seed or m.players != plan.players
            or seating != list(plan.seat_bot_ids)):
        raise StorageError(f"match key {plan.key!r} is already scheduled differently")


def _check_result(record: StoredMatch, players: int) -> None:
    if len(record.totals) != players or len(record.ranks) != players:
        raise ValueError(f"match {record.match_id!r}: need totals and ranks for {players} seats")
    if any(r < 1 for r in record.ranks):
        raise ValueError(f"match {record.match_id!r}: ranks start at 1")
    if any(len(r) != players for r in record.round_scores):
        raise ValueError(f"match {record.match_id!r}: a round score row is not {players} long")


def _check_seat_logs(record: StoredMatch, players: int) -> None:
    seen: set[int] = set()
    for x in record.seat_logs:
        if not 0 <= x.seat < players or x.seat in seen:
            raise ValueError(f"match {record.match_id!r}: a seat log for seat {x.seat} "
                             f"(one per seat of {players})")
        if x.output_bytes < 0:
            raise ValueError(f"match {record.match_id!r}: seat {x.seat} printed "
                             f"{x.output_bytes} bytes")
        seen.add(x.seat)


def _storable_text(text: str) -> str:
    """`text` as both backends store it: PostgreSQL refuses NUL characters in text
    and neither encodes lone surrogates, so those become U+FFFD and "?"."""
    text = text.replace("\x00", "\N{REPLACEMENT CHARACTER}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _store_log(s: Session, match_id: str, log: Mapping[str, Any], fmt: int) -> None:
    document = dict(log)
    digest = hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
    s.add(GameLog(match_id=match_id, format=fmt, log=document, sha256=digest))
    s.flush()


def _insert_missing_ratings(s: Session, pool: str, bot_ids: Sequence[int], now: datetime) -> None:
    have = set(s.scalars(select(Rating.bot_id).where(Rating.pool == pool,
                                                      Rating.bot_id.in_(bot_ids))))
    rows = [{"bot_id": b, "pool": pool, "elo": INITIAL_ELO, "games": 0, "updated_at": now}
            for b in bot_ids if b not in have]
    if not rows:
        return
    # a concurrent writer may insert the same rows first: theirs win, then both lock them
    dialect = s.get_bind().dialect.name
    if dialect == "postgresql":
        s.execute(postgresql.insert(Rating).values(rows).on_conflict_do_nothing())
    elif dialect == "sqlite":
        s.execute(sqlite.insert(Rating).values(rows).on_conflict_do_nothing())
    else:
        s.add_all(Rating(**r) for r in rows)
        s.flush()


def _rate(s: Session, match_id: str, pool: str, ranks: list[tuple[int, int]],
          now: datetime) -> None:
    bot_ids = sorted({b for b, _ in ranks})
    _insert_missing_ratings(s, pool, bot_ids, now)
    rows = {r.bot_id: r for r in s.scalars(
        select(Rating).where(Rating.pool == pool, Rating.bot_id.in_(bot_ids))
        .order_by(Rating.bot_id).with_for_update())}
    after = elo_update({b: r.elo for b, r in rows.items()}, ranks)
    for bot_id in bot_ids:
        row = rows[bot_id]
        s.add(RatingHistory(bot_id=bot_id, pool=pool, match_id=match_id, elo_before=row.elo,
                            elo_after=after[bot_id], created_at=now))
        row.elo, row.games, row.updated_at = after[bot_id], row.games + 1, now
    s.flush()
