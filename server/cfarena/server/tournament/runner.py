"""Running a tournament: a local referee, bot subprocesses, the schedule, storage.

`run_tournament(config, db, progress)` starts a referee on 127.0.0.1, spawns one
process per bot (more when a bot fills several seats of a table), plays every
pending match of the schedule with at most `concurrency` at once (and never
more than a bot's declared capacity: the referee only seats free connections),
stores each match (result, log, ratings) in one transaction as it ends, and
returns the tournament id. Running the same configuration again resumes it:
finished matches are kept, interrupted or unplayed ones are played.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cfarena.engine import Rules
from cfarena.server.botproc import BotProcess, bundled_command
from cfarena.server.gamelog import record_to_log
from cfarena.server.referee import MatchRecord, RefereeServer, TimeControl, TokenRegistry, new_token
from cfarena.server.storage import (
    Database,
    FaultRecord,
    MatchPlan,
    ScheduledMatch,
    TournamentStatus,
    config_hash,
    hash_token,
)
from cfarena.server.storage import MatchRecord as StoredMatch
from cfarena.server.tournament.schedule import round_robin, seats_needed

log = logging.getLogger("cfarena.tournament")


class TournamentError(Exception):
    """A tournament that cannot start or go on (a bot that does not start, ...)."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """A participant: a bundled bot (`command` None) or a shell command."""

    name: str
    command: str | None = None

    @property
    def bundled(self) -> bool:
        return self.command is None

    def describe(self) -> str:
        return f"bundled:{self.name}" if self.command is None else self.command


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """Everything that defines a tournament (its hash identifies it for resume)."""

    bots: tuple[BotSpec, ...]
    rules: Rules
    players: int = 4
    games: int = 1
    seed: int = 1
    time_control: TimeControl = field(default_factory=TimeControl)
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        tc = self.time_control
        return {
            "bots": [{"name": b.name, "command": b.describe()} for b in self.bots],
            "rules": self.rules.to_options(),
            "players": self.players,
            "games": self.games,
            "seed": self.seed,
            "time_control": {
                "move_timeout_ms": tc.move_timeout_ms,
                "bank_ms": tc.bank_ms,
                "increment_ms": tc.increment_ms,
                "strikes": tc.strikes,
            },
        }

    @property
    def config_hash(self) -> str:
        return config_hash(self.to_json())


class ProgressSink(Protocol):
    """What the CLI's progress display is told."""

    def started(self, tournament_id: int, total: int, done: int, resumed: bool) -> None: ...

    def match_done(self, record: MatchRecord, leader: str | None) -> None: ...


@dataclass
class _Quiet:
    def started(self, tournament_id: int, total: int, done: int, resumed: bool) -> None:
        pass

    def match_done(self, record: MatchRecord, leader: str | None) -> None:
        pass


@dataclass
class TournamentRun:
    """What a finished (or stopped) run did."""

    tournament_id: int
    resumed: bool
    played: int
    total: int
    status: str
    wall_s: float


def to_stored(record: MatchRecord) -> StoredMatch:
    """The storage form of a referee match record (with its game log)."""
    return StoredMatch(
        match_id=record.match_id,
        status=record.status,  # type: ignore[arg-type]
        reason=record.reason or None,
        round_scores=record.round_scores,
        totals=record.totals,
        ranks=record.ranks,
        forfeited=record.forfeited,
        faults=[FaultRecord(f.seat, f.kind, f.detail, f.turn_id) for f in record.faults],
        log=record_to_log(record),
        duration_s=max(0.0, record.finished_at - record.started_at)
        if record.started_at
        else None,
    )


def plan_matches(config: TournamentConfig, bot_ids: dict[str, int]) -> list[MatchPlan]:
    options = config.rules.to_options()
    return [
        MatchPlan(
            key=m.key,
            seed=m.seed,
            rules=options,
            players=config.players,
            seat_bot_ids=[bot_ids[name] for name in m.seats],
        )
        for m in round_robin([b.name for b in config.bots], config.players, config.games,
                             config.seed)
    ]


async def run_tournament(
    config: TournamentConfig,
    db: Database,
    *,
    concurrency: int = 2,
    progress: ProgressSink | None = None,
    resume_id: int | None = None,
    log_dir: Path | None = None,
    connect_timeout: float = 30.0,
    on_server: Callable[[RefereeServer], None] | None = None,
) -> TournamentRun:
    """Play (or resume) a tournament; see the module docstring."""
    sink = progress or _Quiet()
    config.rules.resolve(config.players)  # RulesError before anything starts
    started = time.monotonic()
    tokens = TokenRegistry()
    secrets: dict[str, str] = {}
    for bot in config.bots:
        secrets[bot.name] = new_token()
        tokens.add(bot.name, secrets[bot.name])

    # Bots first: a bot that does not start or connect stops the run before
    # anything is written to the database.
    server = RefereeServer(tokens)
    await server.start()
    if on_server is not None:
        on_server(server)
    procs: list[BotProcess] = []
    played = 0
    status = TournamentStatus.INTERRUPTED
    tournament_id: int | None = None
    try:
        need = seats_needed(round_robin([b.name for b in config.bots], config.players, 1, 0))
        for bot in config.bots:
            for instance in range(need.get(bot.name, 1)):
                procs.append(_spawn(bot, instance, server.address, secrets[bot.name],
                                    concurrency, log_dir))
        await _wait_connected(server, procs, [b.name for b in config.bots], connect_timeout)

        tournament_id, resumed = _open_tournament(config, db, resume_id)
        bot_ids = {
            bot.name: db.register_local_bot(bot.name, hash_token(secrets[bot.name]),
                                            bot.describe())
            for bot in config.bots
        }
        plans = plan_matches(config, bot_ids)
        db.schedule_matches(tournament_id, plans)
        pending = db.pending_matches(tournament_id)
        total = len(plans)
        names = {bid: name for name, bid in bot_ids.items()}
        sink.started(tournament_id, total, total - len(pending), resumed)

        gate = asyncio.Semaphore(concurrency)
        lock = asyncio.Lock()

        async def play(match: ScheduledMatch) -> None:
            nonlocal played
            seat_bots = [names[i] for i in match.seat_bot_ids]
            async with gate:
                db.mark_running(match.id)
                record = await server.run_match(
                    match.id,
                    Rules.from_options(match.rules),
                    match.seed,
                    seat_bots,
                    config.time_control,
                    seat_timeout=connect_timeout,
                    tournament_id=tournament_id,
                    key=match.key,
                    on_record=lambda rec: _store(db, rec),
                )
            async with lock:
                played += 1
                sink.match_done(record, _leader(db, tournament_id))

        tasks = [asyncio.ensure_future(play(m)) for m in pending]
        monitor = asyncio.ensure_future(_watch_processes(procs))
        try:
            done_all: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*tasks))
            finished, _ = await asyncio.wait([done_all, monitor],
                                             return_when=asyncio.FIRST_COMPLETED)
            if monitor in finished:
                monitor.result()  # raises TournamentError
            done_all.result()
        finally:
            monitor.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, monitor, return_exceptions=True)
        status = TournamentStatus.FINISHED
    finally:
        if tournament_id is not None:
            with contextlib.suppress(Exception):
                db.set_tournament_status(tournament_id, status)
        for proc in procs:  # bots first, so their streams end before the server stops
            proc.stop()
        await server.stop(grace=0.5)
    assert tournament_id is not None
    return TournamentRun(tournament_id, resumed, played, total, status.value,
                         time.monotonic() - started)


def _store(db: Database, record: MatchRecord) -> None:
    db.record_match(to_stored(record))


def _open_tournament(
    config: TournamentConfig, db: Database, resume_id: int | None
) -> tuple[int, bool]:
    if resume_id is not None:
        existing = db.get_tournament(resume_id)
        if existing is None:
            raise TournamentError(f"no tournament {resume_id} to resume")
        if existing.config_hash != config.config_hash:
            raise TournamentError(
                f"tournament {resume_id} was run with a different configuration; "
                "resume it with the same options (see `cfarena tournaments`)"
            )
        db.set_tournament_status(resume_id, TournamentStatus.RUNNING)
        return resume_id, True
    found = db.find_resumable_tournament(config.config_hash)
    if found is not None:
        db.set_tournament_status(found.id, TournamentStatus.RUNNING)
        return found.id, True
    name = config.name or f"{config.rules.name} {config.players}p round-robin"
    return db.create_tournament(name, config.to_json()), False


def _spawn(bot: BotSpec, instance: int, address: str, token: str, capacity: int,
           log_dir: Path | None) -> BotProcess:
    command: str | list[str]
    if bot.command is None:
        command = [*bundled_command(bot.name), "--capacity", str(capacity)]
    else:
        command = bot.command
    proc = BotProcess(
        f"{bot.name}#{instance}",
        command,
        env={"CFARENA_SERVER": address, "CFARENA_TOKEN": token,
             "CFARENA_CAPACITY": str(capacity)},
        log_path=(log_dir / f"{bot.name}-{instance}.log") if log_dir else None,
    )
    proc.start()
    return proc


async def _wait_connected(server: RefereeServer, procs: Sequence[BotProcess],
                          names: Sequence[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        missing = [n for n in names if server.connection_count(n) == 0]
        if not missing:
            return
        for proc in procs:
            code = proc.poll()
            if code is not None and proc.name.split("#")[0] in missing:
                raise TournamentError(
                    f"bot {proc.name.split('#')[0]!r} exited with code {code} before connecting"
                    f"{_tail(proc)}"
                )
        if time.monotonic() > deadline:
            raise TournamentError(
                f"bot(s) {', '.join(missing)} did not connect within {timeout:g} s"
            )
        await asyncio.sleep(0.05)


async def _watch_processes(procs: Sequence[BotProcess]) -> None:
    """Restart bot processes that exit mid-tournament (a few times), else give up."""
    restarts: dict[str, int] = {}
    while True:
        await asyncio.sleep(0.2)
        for proc in procs:
            code = proc.poll()
            if code is None:
                continue
            count = restarts.get(proc.name, 0)
            if count >= 3:
                raise TournamentError(
                    f"bot {proc.name} keeps exiting (code {code}); stopping{_tail(proc)}"
                )
            restarts[proc.name] = count + 1
            log.warning("bot %s exited with code %s; restarting", proc.name, code)
            proc.start()


# gRPC core / absl log lines ("E1202 20:34:01.123456   123 file.cc:45] ..."), which
# a bot's gRPC runtime may print on its way out, after the bot's own last words
_GRPC_LOG_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl)")


def _tail(proc: BotProcess) -> str:
    """': ' and the bot's last line of output (gRPC's own log lines skipped), or ''."""
    if proc.log_path is None or not proc.log_path.exists():
        return ""
    lines = proc.log_path.read_text(errors="replace").strip().splitlines()
    own = [line for line in lines if line.strip() and not _GRPC_LOG_LINE.match(line)]
    last = own[-1] if own else (lines[-1] if lines else "")
    return (": " + last[:200]) if last else ""


def _leader(db: Database, tournament_id: int) -> str | None:
    table = db.standings(tournament_id)
    return f"{table[0].name} ({table[0].elo:.0f})" if table else None
