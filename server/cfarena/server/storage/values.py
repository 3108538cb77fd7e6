"""Plain frozen values crossing the storage facade (never ORM objects)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cfarena.match.log_format import LOG_FORMAT
from cfarena.match.record import Fault
from cfarena.server.storage.models import FaultKind, MatchStatus, TournamentStatus

__all__ = [
    "BotInfo",
    "FaultInfo",
    "FaultKind",
    "MatchDetail",
    "MatchInfo",
    "MatchPlan",
    "MatchStatus",
    "RatingPoint",
    "ScheduledMatch",
    "SeatInfo",
    "SeatLog",
    "SkillStanding",
    "Standing",
    "StoredMatch",
    "TournamentInfo",
    "TournamentStatus",
]


@dataclass(frozen=True, slots=True)
class BotInfo:
    id: int
    name: str
    token_hash: str
    command: str | None
    created_at: datetime
    revoked_at: datetime | None = None  # `cfarena bots revoke`: its token admits nothing
    token_changed_at: datetime | None = None  # the last `cfarena bots rotate`
    tournament_id: int | None = None  # a tournament's entrant (None: a ladder bot)


@dataclass(frozen=True, slots=True)
class TournamentInfo:
    id: int
    name: str
    config: dict[str, Any]
    config_hash: str
    status: TournamentStatus
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class MatchPlan:
    """One match to schedule. `seat_bot_ids[s]` sits in seat s (a bot may hold several seats).

    `pool` is the rating pool of a match outside tournaments; by default
    `"<preset>/<players>p"` from `rules["preset"]` ("custom" when absent), and such
    a match is rated in the "global" pool too. A tournament's match is rated in its
    tournament's pool only (`scheduling.tournament_pool`; `pool` is not used).
    `seed` must fit a signed 64-bit integer.
    """

    key: str
    seed: int
    rules: Mapping[str, Any]
    players: int
    seat_bot_ids: Sequence[int]
    pool: str | None = None
    # the version each seat's bot reported in its Hello (empty: "" for every seat)
    seat_versions: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class ScheduledMatch:
    """A match of a tournament that is not finished yet (for resume)."""

    id: str
    key: str
    seed: int
    rules: dict[str, Any]
    players: int
    pool: str
    seat_bot_ids: tuple[int, ...]
    status: MatchStatus


@dataclass(frozen=True, slots=True)
class SeatLog:
    """What the bot process in `seat` printed during one match (stdout and stderr together).

    `output` is the text as captured (a long output keeps its start and its end
    around a "[... N bytes not kept ...]" line), `output_bytes` how many bytes
    the process printed in all, and `exit` one line on how it ended ("exited
    with code 3: <last line>", "killed by SIGKILL", the sandbox limit breached)
    or None. For the organiser, and the web page's signed-in entrant of that seat's
    bot (`web/entrant_data.py`); nothing serves it to bots.
    """

    seat: int
    output: str
    output_bytes: int
    exit: str | None = None


@dataclass(frozen=True, slots=True)
class StoredMatch:
    """What storage keeps of one match, stored by `Database.record_match`: its
    result, faults, game log and seat logs (`storage.match_writer.to_stored` makes one
    from the referee's `MatchRecord`).

    For a finished match `totals`, `ranks` are per seat (rank 1 = best, equal =
    shared) and `round_scores[r][seat]` the score of seat in round r. An
    aborted match (status ABORTED) needs none of them; it is not rated and is
    scheduled again. `forfeited` lists seats that forfeited. `seat_logs` holds
    at most one `SeatLog` per seat (a list, so it can be filled after the rest).

    Recording a match again (an aborted or cut-off attempt played once more)
    replaces everything of the earlier attempt: faults, seat logs, game log.

    `lease` is the token `Database.mark_running` gave the process that played this
    copy: the record is stored only while the match still holds that lease
    (`LeaseLost` otherwise). None: a record of a match never started (no lease), not
    fenced.
    """

    match_id: str
    status: MatchStatus = MatchStatus.FINISHED
    reason: str | None = None
    round_scores: Sequence[Sequence[int]] = ()
    totals: Sequence[int] = ()
    ranks: Sequence[int] = ()
    forfeited: Sequence[int] = ()
    faults: Sequence[Fault] = ()
    log: Mapping[str, Any] | None = None
    log_format: int = LOG_FORMAT  # the format `log` is written in
    duration_s: float | None = None
    finished_at: datetime | None = None
    seat_logs: list[SeatLog] = field(default_factory=list)
    lease: str | None = None


@dataclass(frozen=True, slots=True)
class SeatInfo:
    seat: int
    bot_id: int
    bot_name: str
    total: int | None
    rank: int | None
    forfeited: bool
    faults: int


@dataclass(frozen=True, slots=True)
class MatchInfo:
    id: str
    tournament_id: int | None
    key: str
    pool: str
    seed: int
    players: int
    status: MatchStatus
    reason: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    seats: tuple[SeatInfo, ...]


@dataclass(frozen=True, slots=True)
class FaultInfo:
    id: int
    match_id: str
    seat: int
    bot_id: int
    bot_name: str
    kind: FaultKind
    detail: str
    turn_id: int | None  # the seat's turn id it happened at (None: not recorded)
    created_at: datetime


@dataclass(frozen=True, slots=True)
class MatchDetail:
    match: MatchInfo
    rules: dict[str, Any]
    round_scores: list[list[int]] | None
    faults: tuple[FaultInfo, ...]
    log_sha256: str | None = None
    log_format: int | None = None


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot in a table of standings (only finished matches count, faults from all).

    `wins` counts matches where the bot had a rank-1 seat (shared firsts count);
    `mean_score` is points per round per seat (lower is better in Chicken Foot).
    """

    bot_id: int
    name: str
    elo: float
    matches: int
    wins: int
    mean_score: float | None
    faults: int
    forfeits: int = 0


@dataclass(frozen=True, slots=True)
class RatingPoint:
    match_id: str
    pool: str
    elo_before: float
    elo_after: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SkillStanding:
    """The online (openskill) rating of one version of a bot in one pool.

    `conservative` is mu - 3 sigma (what the ladder ranks by), `elo` the same on
    an Elo-like scale (see `cfarena.server.rating.online`); `games` the finished matches
    rated; `seats[p]` how many of its matches (any status but aborted) it played
    in seat position p (for seat balance); `updated_at` its last rated match.
    """

    bot_id: int
    name: str
    version: str
    mu: float
    sigma: float
    conservative: float
    elo: float
    games: int
    updated_at: datetime | None
    seats: tuple[int, ...] = ()
