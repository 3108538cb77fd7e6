"""ORM tables of the cfarena database (SQLAlchemy 2 typed declarative).

The schema is upgraded by the Alembic migrations in `migrations/versions`; a new
database is created from these classes (`connect._create_at_head`), so they must be
the migrated schema exactly: column order, and every constraint's name. A check is
named "ck_<table>_<column>" here as in the migrations, which the naming convention
prefixes once more ("ck_faults_ck_faults_kind", as 0002 says). tests/storage/
test_schema.py compares a new database with a migrated one on every backend.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# one enum each for the whole arena: how a match stands or ended, how a seat faulted
from cfarena.match.record import FaultKind as FaultKind
from cfarena.match.record import MatchStatus as MatchStatus

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSON columns: SQL NULL (not the JSON text "null") for None.
Json = JSON(none_as_null=True)
Timestamp = DateTime(timezone=True)


class TournamentStatus(enum.StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


def _in(column: str, values: type[enum.Enum]) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Bot(Base):
    """A ladder bot (`tournament_id` None: registered with `cfarena bots add`, it dials
    in to `cfarena serve`) or one tournament's entrant (registered by the tournament,
    which starts its processes itself). A name is one ladder bot's, and within a
    tournament one entrant's: an entrant named like a ladder bot is another record, so
    a tournament never touches a ladder bot's token, versions or ratings (0008)."""

    __tablename__ = "bots"
    __table_args__ = (
        Index("uq_bots_ladder_name", "name", unique=True,
              sqlite_where=text("tournament_id IS NULL"),
              postgresql_where=text("tournament_id IS NULL")),
        Index("uq_bots_tournament_name", "tournament_id", "name", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    command: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    # set by `cfarena bots revoke`: the token admits nothing, live connections are closed
    revoked_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # the last `cfarena bots rotate` (None: the token it was registered with)
    token_changed_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # the tournament whose entrant this is (None: a ladder bot). Last, where 0008 added
    # it: a new database is created from these classes (`connect._create_at_head`) and
    # has the migrated one's column order
    tournament_id: Mapped[int | None] = mapped_column(
        ForeignKey("tournaments.id", ondelete="CASCADE"))


class Tournament(Base):
    __tablename__ = "tournaments"
    __table_args__ = (CheckConstraint(_in("status", TournamentStatus),
                                      name="ck_tournaments_status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(Json)
    config_hash: Mapped[str] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)


class Match(Base):
    __tablename__ = "matches"
    __table_args__ = (
        UniqueConstraint("tournament_id", "key"),
        CheckConstraint(_in("status", MatchStatus), name="ck_matches_status"),
        Index("ix_matches_tournament_status", "tournament_id", "status"),
        Index("ix_matches_arena_status", "arena_id", "status"),
    )

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tournament_id: Mapped[int | None] = mapped_column(
        ForeignKey("tournaments.id", ondelete="CASCADE")
    )
    key: Mapped[str] = mapped_column(String(200))
    ordinal: Mapped[int] = mapped_column(Integer)
    pool: Mapped[str] = mapped_column(String(100))
    seed: Mapped[int] = mapped_column(BigInteger)
    rules: Mapped[dict[str, Any]] = mapped_column(Json)
    players: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    round_scores: Mapped[list[list[int]] | None] = mapped_column(Json)
    totals: Mapped[list[int] | None] = mapped_column(Json)
    ranks: Mapped[list[int] | None] = mapped_column(Json)
    rounds: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    started_at: Mapped[datetime | None] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
    duration_s: Mapped[float | None] = mapped_column(Float)
    # the arena process (`ArenaRow.id`) running this match outside a tournament (None:
    # tournaments, and matches from before 0004)
    arena_id: Mapped[str | None] = mapped_column(String(64))
    # the lease (fencing token) of the process playing the match, from `mark_running`;
    # None once it is revoked (the match aborted by another arena, its job put back in
    # the queue): a record is stored only under the lease it was played with (0005)
    lease: Mapped[str | None] = mapped_column(String(32))


class ArenaRow(Base):
    """One `cfarena serve` process on this database: it beats every poll (about once a
    second); an arena whose beat is older than the stale limit is dead, and a live one
    marks its unfinished matches aborted."""

    __tablename__ = "arenas"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))  # the machine's name (gethostname)
    address: Mapped[str] = mapped_column(String(200))  # where its bots dial in (host:port)
    started_at: Mapped[datetime] = mapped_column(Timestamp)
    heartbeat_at: Mapped[datetime] = mapped_column(Timestamp)
    # a clean stop; or, for an arena found silent past the stale limit, its last beat
    stopped_at: Mapped[datetime | None] = mapped_column(Timestamp)


class MatchSeat(Base):
    __tablename__ = "match_seats"

    match_id: Mapped[str] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    total: Mapped[int | None] = mapped_column(Integer)
    rank: Mapped[int | None] = mapped_column(Integer)
    forfeited: Mapped[bool] = mapped_column(Boolean)
    faults: Mapped[int] = mapped_column(Integer)
    # the version the bot reported in its Hello ("" for none; always "" in tournaments)
    bot_version: Mapped[str] = mapped_column(String(64), server_default="")


class Fault(Base):
    __tablename__ = "faults"
    __table_args__ = (
        ForeignKeyConstraint(
            ["match_id", "seat"],
            ["match_seats.match_id", "match_seats.seat"],
            ondelete="CASCADE",
            name="fk_faults_match_seat",
        ),
        CheckConstraint(_in("kind", FaultKind), name="ck_faults_kind"),
        Index("ix_faults_match_id", "match_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[str] = mapped_column(String(200))
    seat: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(Text)
    at_turn: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(Timestamp)


class GameLog(Base):
    __tablename__ = "game_logs"

    match_id: Mapped[str] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    format: Mapped[int] = mapped_column(Integer)
    log: Mapped[dict[str, Any]] = mapped_column(Json)
    sha256: Mapped[str] = mapped_column(String(64))


class SeatLogRow(Base):
    """What one seat's bot process printed in one match (stdout and stderr, as captured)."""

    __tablename__ = "seat_logs"
    __table_args__ = (
        ForeignKeyConstraint(
            ["match_id", "seat"],
            ["match_seats.match_id", "match_seats.seat"],
            ondelete="CASCADE",
            name="fk_seat_logs_match_seat",
        ),
    )

    match_id: Mapped[str] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    output: Mapped[str] = mapped_column(Text)
    output_bytes: Mapped[int] = mapped_column(BigInteger)
    exit: Mapped[str | None] = mapped_column(Text)


class Rating(Base):
    __tablename__ = "ratings"

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    pool: Mapped[str] = mapped_column(String(100), primary_key=True)
    elo: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(Timestamp)


class RatingHistory(Base):
    __tablename__ = "rating_history"
    __table_args__ = (
        UniqueConstraint("match_id", "bot_id", "pool"),
        Index("ix_rating_history_bot_pool", "bot_id", "pool"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    pool: Mapped[str] = mapped_column(String(100))
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    elo_before: Mapped[float] = mapped_column(Float)
    elo_after: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(Timestamp)


class SkillRating(Base):
    """The online Weng-Lin (Plackett-Luce, openskill) rating of one version of a bot
    in one pool, updated in the transaction that records each finished match."""

    __tablename__ = "skill_ratings"

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    pool: Mapped[str] = mapped_column(String(100), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(Timestamp)


class SkillHistory(Base):
    """A (bot, version)'s online rating in one pool after one finished match, written
    with the rating's update (0006): the bot page's chart. An entrant holding several
    seats of a match has one row for it."""

    __tablename__ = "skill_history"
    __table_args__ = (
        UniqueConstraint("match_id", "bot_id", "version", "pool"),
        Index("ix_skill_history_bot_pool", "bot_id", "pool"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    version: Mapped[str] = mapped_column(String(64))
    pool: Mapped[str] = mapped_column(String(100))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)


class LadderBotTally(Base):
    """One bot's results on the ladder (matches outside tournaments) of one pool, or of
    all of them ("global"), kept up to date by the transaction that records each match
    (`ladder_tallies`, 0010): what `Database.standings` and `ladder_activity` read
    instead of the whole history. `faults` and `last_fault_id` count the faults of its
    matches of any status, the rest its finished matches."""

    __tablename__ = "ladder_bot_tallies"

    pool: Mapped[str] = mapped_column(String(100), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    matches: Mapped[int] = mapped_column(Integer)  # finished matches it held a seat in
    wins: Mapped[int] = mapped_column(Integer)  # of them, those it won (a seat ranked 1)
    points: Mapped[int] = mapped_column(BigInteger)  # its seats' totals
    rounds: Mapped[int] = mapped_column(BigInteger)  # the rounds of its seats' matches
    forfeits: Mapped[int] = mapped_column(Integer)  # its forfeited seats
    faults: Mapped[int] = mapped_column(Integer)
    last_fault_id: Mapped[int | None] = mapped_column(Integer)  # its latest fault's id
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)  # its latest finish


class LadderSeatTally(Base):
    """How many finished ladder matches of one pool (or of all: "global") a (bot,
    version) played from one seat position (0010): the finished part of
    `skill_standings`' seat counts."""

    __tablename__ = "ladder_seat_tallies"

    pool: Mapped[str] = mapped_column(String(100), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    matches: Mapped[int] = mapped_column(Integer)


class LadderResultTally(Base):
    """One distinct result of the finished ladder matches of one pool (or of all:
    "global"), `ladder_tallies.result_key`'s text, with how many matches ended so and
    the first of them by finishing time, then id (0010): what the Bradley-Terry check
    is fitted on (`Database.results_by_version`)."""

    __tablename__ = "ladder_result_tallies"

    pool: Mapped[str] = mapped_column(String(100), primary_key=True)
    result: Mapped[str] = mapped_column(Text, primary_key=True)
    matches: Mapped[int] = mapped_column(Integer)
    first_finished_at: Mapped[datetime] = mapped_column(Timestamp)
    first_match_id: Mapped[str] = mapped_column(String(200))


class SprtVerdict(enum.StrEnum):
    """Where a stored bot test (`cfarena sprt`) stands: `sprt.sequential.Verdict`'s values."""

    CONTINUE = "continue"
    H1 = "H1"
    H0 = "H0"
    INCONCLUSIVE = "inconclusive"


class SprtTest(Base):
    """A sequential test of NEW against OLD (`cfarena sprt`, 0007). Its matches are the
    matches of its own tournament (`tournament_id`: scheduled, played, stored and shown
    like any tournament's); the row holds what the test adds: its two bots, its
    bounds (`config`), and where it stands after its last counted deal group."""

    __tablename__ = "sprt_tests"
    __table_args__ = (CheckConstraint(_in("verdict", SprtVerdict), name="ck_sprt_tests_verdict"),
                      Index("uq_sprt_tests_config_hash", "config_hash", unique=True))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(
        ForeignKey("tournaments.id", ondelete="CASCADE"), unique=True)
    new_bot: Mapped[str] = mapped_column(String(200))
    old_bot: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(Json)
    config_hash: Mapped[str] = mapped_column(String(64))  # one test each (0009)
    verdict: Mapped[str] = mapped_column(String(16))
    groups: Mapped[int] = mapped_column(Integer)
    matches: Mapped[int] = mapped_column(Integer)
    llr: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)


class SprtGroup(Base):
    """One counted deal group of a test, in order: its score and the test's LLR after it
    (the LLR trace)."""

    __tablename__ = "sprt_groups"

    test_id: Mapped[int] = mapped_column(
        ForeignKey("sprt_tests.id", ondelete="CASCADE"), primary_key=True)
    group_number: Mapped[int] = mapped_column(Integer, primary_key=True)  # from 0
    score: Mapped[float] = mapped_column(Float)
    llr: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
