"""The JSON API's response bodies (pydantic models: FastAPI derives /openapi.json
from them, and the tests validate every answer against that description)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from cfarena.server.bot_names import (
    BOT_NAME_CHARACTERS,
    BOT_NAME_PATTERN,
    MAX_BOT_NAME,
    bot_name_problem,
)
from cfarena.server.web.data import RATING_POINTS


class LastError(BaseModel):
    kind: str = Field(description="the fault's kind (docs/FAILURES.md)")
    detail: str
    match: str = Field(description="the match it happened in")
    at: str = Field(description="when (ISO 8601, UTC)")


class LeaderboardRow(BaseModel):
    rank: int | None = Field(description="place by `rating` (None: a connected bot with no "
                             "rated match yet)")
    bot: str
    version: str = Field(description='the version the bot reported ("" for none)')
    versions: int = Field(description="how many versions of the bot were rated")
    rating: int | None = Field(description="online rating, Elo-like: 1500 + 29.5 (mu - 3 "
                               "sigma): what ranks the table")
    score: float | None = Field(description="mu - 3 sigma (the rating before its scale)")
    mu: float | None
    sigma: float | None
    check_rank: int | None = Field(
        description="the bot's place by the order-free Bradley-Terry check of the same "
        "results (a second estimate; its scale is its own: compare places, not numbers)")
    interval: list[int] | None = Field(
        description="95% bootstrap interval of the Bradley-Terry check (its own scale)")
    bt_rating: int | None = Field(description="the Bradley-Terry check's estimate (its own "
                                  "scale)")
    games: int = Field(description="rated matches of this version")
    matches: int = Field(description="finished matches of the bot (all versions) in the pool")
    win_share: float | None = Field(description="share of those matches it won (rank 1)")
    points_per_round: float | None = Field(description="average points per round (lower is "
                                           "better)")
    faults: int
    revoked: bool = Field(description="its token was revoked: it can no longer play")
    connected: bool | None = Field(description="dialled in to this arena now (None: not known)")
    waiting_for: int | None = Field(
        description="connected, and this many more bots must connect before a table is full")
    last_seen: str | None = Field(description="the end of its latest ladder match (or the "
                                  "start of one it plays), ISO 8601 UTC")
    last_error: LastError | None = Field(description="its latest fault in a ladder match")


class Leaderboard(BaseModel):
    pool: str
    finished: int = Field(description="finished matches of the pool")
    rows: list[LeaderboardRow]


class Seat(BaseModel):
    seat: int
    bot: str
    total: int | None
    rank: int | None
    forfeited: bool
    faults: int


class MatchSummary(BaseModel):
    id: str
    status: str = Field(description="scheduled, running, finished or aborted")
    pool: str
    players: int
    tournament_id: int | None
    reason: str | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    duration_s: float | None
    seats: list[Seat]


class Fault(BaseModel):
    seat: int
    bot: str
    kind: str
    detail: str
    turn: int | None
    at: str | None


class SeatLuck(BaseModel):
    seat: int
    luck: float = Field(description="points the seat's draws saved it (+) or cost it (-) "
                        "against the boneyard's average")
    adjusted: float = Field(description="its points plus its luck: what `cfarena sprt` scores")


class MatchDetail(MatchSummary):
    round_scores: list[list[int]] = Field(description="points per round (rows), per seat")
    faults: list[Fault]
    revealed: bool = Field(description="whether the deal (seed, log, hands) may be shown: "
                           "every match dealt with this seed is over")
    seed: str | None = Field(description="the deal's seed (decimal), only when revealed")
    log: str | None = Field(description="URL of the game log, only when revealed")
    luck: list[SeatLuck] | None = Field(
        description="per seat, the luck of its draws, only when revealed and finished "
        "(computed from the boneyard; docs/TESTING_BOTS.md)")


class BotVersion(BaseModel):
    version: str
    matches: int = Field(description="its matches in any pool and status (running included)")
    rated: int = Field(description="its finished matches rated in the pool")
    first: str
    last: str
    score: float | None
    skill_elo: float | None
    decisions: int
    median_ms: float | None
    p99_ms: float | None


class BotFault(BaseModel):
    match: str
    seat: int
    turn: int | None
    kind: str
    detail: str
    at: str


class RatingPoint(BaseModel):
    number: int = Field(description="which of the bot's rated matches in the pool this "
                       "point follows (1: its first)")
    version: str
    rating: float = Field(description="the online rating (Elo-like, as on the leaderboard) "
                          "of that version after this match")


class Bot(BaseModel):
    bot: str
    pool: str
    versions: list[BotVersion]
    faults: list[BotFault]
    rating_history: list[RatingPoint] = Field(
        description=f"the rating after each of the bot's latest {RATING_POINTS} rated "
        "matches in the pool, oldest first")
    recent_matches: list[MatchSummary]


class Progress(BaseModel):
    total: int = Field(description="scheduled matches in all")
    scheduled: int = Field(description="waiting to be played (or played again)")
    running: int
    finished: int
    aborted: int


class TournamentSummary(BaseModel):
    id: int
    name: str
    status: str
    created_at: str | None
    finished_at: str | None
    players: int
    rules: str = Field(description="the rules preset (\"custom\" for others)")
    games: int
    bots: list[str] = Field(description="the bots' names (never their commands)")
    gauntlet: str | None = Field(
        default=None, description="a gauntlet's NEW bot: only its tables were played")
    progress: Progress


class HeadToHead(BaseModel):
    """One bot's results against another, per deal (a deal's rotations: one value)."""

    new: str | None = Field(default=None, description="in a gauntlet's column: NEW")
    score: float = Field(description="its mean score per deal against the other (0.5: even)")
    elo: float | None = Field(description="its Elo difference over the other (None: open)")
    elo_low: float | None = Field(description="95% interval, low end (None: -infinity)")
    elo_high: float | None = Field(description="95% interval, high end (None: +infinity)")
    matches: int = Field(description="matches where both sat")
    deals: int = Field(description="deals where both sat")


class HeadToHeadMatrix(BaseModel):
    bots: list[str] = Field(description="the bots, in the standings' order")
    rows: list[list[HeadToHead | None]] = Field(
        description="row bot against column bot (None: the diagonal, or never met)")


class TournamentStanding(BaseModel):
    rank: int
    bot: str
    bt_rating: int | None = Field(description="Bradley-Terry estimate (Elo scale)")
    interval: list[int] | None = Field(description="its bootstrap 95% interval")
    elo: int = Field(description="sequential pairwise Elo")
    matches: int
    wins: int
    points_per_round: float | None
    faults: int
    forfeits: int
    gauntlet: HeadToHead | None = Field(
        default=None, description="in a gauntlet: NEW's results against this bot")


class Tournament(TournamentSummary):
    standings: list[TournamentStanding]
    matrix: HeadToHeadMatrix
    matches: list[MatchSummary] = Field(description="its latest matches (no seeds)")


class NewToken(BaseModel):
    name: str
    token: str = Field(description="the bot's token, shown only in this answer")


class BotName(BaseModel):
    name: str = Field(min_length=1, max_length=MAX_BOT_NAME, pattern=BOT_NAME_PATTERN,
                      description=f"1 to {MAX_BOT_NAME} characters: {BOT_NAME_CHARACTERS}")

    @field_validator("name")
    @classmethod
    def _a_bot_name(cls, name: str) -> str:
        problem = bot_name_problem(name)  # the rule every registration follows
        if problem is not None:
            raise ValueError(problem)
        return name


class Done(BaseModel):
    ok: bool
    detail: str


class Ladder(BaseModel):
    paused: bool


class Problem(BaseModel):
    detail: str
