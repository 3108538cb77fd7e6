"""Running a tournament: a local referee, fresh bot processes per match, storage.

`run_tournament(config, db, progress)` starts a referee on a Unix socket in a
private directory, plays every pending match of the schedule with at most
`concurrency` at once, and stores each match (result, log, ratings, each
seat's output) in one transaction as it ends. Every seat of every match gets a
fresh bot process, sandboxed unless the organiser says `--no-sandbox`, started
ahead of need by `BotPool` and connected with a one-time pass; two matches of
the same deal never run at once for one bot. Running the same configuration
again resumes it: finished matches are kept, interrupted or unplayed ones are
played again from their seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from cfarena.engine import Rules
from cfarena.server.gamelog import LOG_FORMAT, record_to_log
from cfarena.server.match_writer import MatchWriter, dump_unsaved, is_outage
from cfarena.server.referee import (
    FaultKind,
    MatchRecord,
    RefereeServer,
    TimeControl,
    TokenRegistry,
    new_token,
)
from cfarena.server.storage import (
    Database,
    FaultRecord,
    MatchPlan,
    MatchStatus,
    ScheduledMatch,
    SeatLog,
    StorageError,
    StoredMatch,
    TournamentInfo,
    TournamentStatus,
    config_hash,
    hash_token,
)
from cfarena.server.storage.locks import TournamentBusy, tournament_lock
from cfarena.server.tournament.pool import (
    BotPool,
    BotStartError,
    Launch,
    WarmBot,
    needed_processes,
)
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
    seed: int | None = None  # None: drawn from the OS's CSPRNG when the tournament is created
    time_control: TimeControl = field(default_factory=TimeControl)
    name: str = ""

    def to_json(self, launch: Launch | None = None) -> dict[str, Any]:
        """What identifies the tournament (hashed to find it again for resume)."""
        tc = self.time_control
        launch = launch or Launch()
        limits = launch.limits
        return {
            "sandbox": {"memory_mib": limits.memory_mib, "cpu_seconds": limits.cpu_seconds,
                        "processes": limits.processes} if launch.sandbox else None,
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
    already_finished: bool = False  # found finished: reported, nothing played


def to_stored(record: MatchRecord) -> StoredMatch:
    """The storage form of a referee match record (with its game log)."""
    return StoredMatch(
        match_id=record.match_id,
        status=record.status,
        reason=record.reason or None,
        round_scores=record.round_scores,
        totals=record.totals,
        ranks=record.ranks,
        forfeited=record.forfeited,
        faults=[FaultRecord(f.seat, f.kind, f.detail, f.turn_id) for f in record.faults],
        log=record_to_log(record),
        log_format=LOG_FORMAT,
        duration_s=max(0.0, record.finished_at - record.started_at)
        if record.started_at
        else None,
        # when it ended, not when it was written (writes may wait for the database)
        finished_at=datetime.fromtimestamp(record.finished_at, UTC)
        if record.finished_at
        else None,
    )


def plan_matches(config: TournamentConfig, bot_ids: dict[str, int], seed: int
                 ) -> list[MatchPlan]:
    options = config.rules.to_options()
    return [
        MatchPlan(
            key=m.key,
            seed=m.seed,
            rules=options,
            players=config.players,
            seat_bot_ids=[bot_ids[name] for name in m.seats],
        )
        for m in round_robin([b.name for b in config.bots], config.players, config.games, seed)
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
    launch: Launch | None = None,
    new: bool = False,
) -> TournamentRun:
    """Play (or resume) a tournament; see the module docstring.

    The same configuration again resumes its unfinished tournament, or, once that
    is finished, only reports it (`already_finished`); `new=True` always starts
    another. A tournament another process is playing is refused (TournamentError).
    """
    sink = progress or _Quiet()
    config.rules.resolve(config.players)  # RulesError before anything starts
    launch = launch or Launch(connect_timeout=connect_timeout)
    started = time.monotonic()
    socket_dir = Path(tempfile.mkdtemp(prefix="cfarena-referee-"))  # 0700: the referee's
    server = RefereeServer(TokenRegistry(), port=None, unix_socket=socket_dir / "arena.sock")
    await server.start()
    if on_server is not None:
        on_server(server)
    played = 0
    status = TournamentStatus.INTERRUPTED
    tournament_id: int | None = None
    resumed = False
    total = 0
    pool: BotPool | None = None
    writer: MatchWriter | None = None
    unsaved: str | None = None
    locks = contextlib.ExitStack()
    locked = False  # this run holds its tournament's lock (only then may it write its status)
    try:
        found = None if new else _find_tournament(config, db, resume_id, launch)
        if found is not None and found.status is TournamentStatus.FINISHED:
            status = TournamentStatus.FINISHED
            tournament_id = found.id
            total = len(db.finished_keys(found.id))
            return TournamentRun(found.id, False, 0, total, status.value,
                                 time.monotonic() - started, already_finished=True)
        if found is not None:
            _lock(locks, db, found.id)
            locked = True
            found_id: int | None = found.id
        else:
            found_id = None
        if found_id is not None:
            ids = {b.name: b.id for b in db.list_bots()}
            names = {bot_id: name for name, bot_id in ids.items()}
            seatings = [[names[i] for i in m.seat_bot_ids]
                        for m in db.pending_matches(found_id)]
        else:
            seatings = [list(m.seats) for m in round_robin(
                [b.name for b in config.bots], config.players, config.games, 0)]
        need = seats_needed(round_robin([b.name for b in config.bots], config.players, 1, 0))
        pool = BotPool(
            server, launch, {b.name: b.command for b in config.bots},
            warm={b.name: need.get(b.name, 1) * concurrency for b in config.bots},
            demand=needed_processes(seatings),
        )
        # Bots first: a bot that does not start or connect stops the run before
        # any match is played.
        try:
            await pool.start()
        except BotStartError as exc:
            raise TournamentError(str(exc)) from None
        tournament_id, pending = _open_tournament(config, db, found_id, launch)
        if found_id is None:
            _lock(locks, db, tournament_id)
            locked = True
        resumed = found_id is not None
        names = {bot_id: name for name, bot_id in _bot_ids(db, config).items()}
        total = len(db.finished_keys(tournament_id)) + len(pending)
        sink.started(tournament_id, total, total - len(pending), resumed)
        lock = asyncio.Lock()
        writer = MatchWriter(db, log.warning)
        writer.start()

        async def play(match: ScheduledMatch) -> None:
            nonlocal played
            assert pool is not None and tournament_id is not None and writer is not None
            record = await _play_match(server, pool, writer, config, match,
                                       [names[i] for i in match.seat_bot_ids],
                                       tournament_id, log_dir)
            async with lock:
                played += 1
                sink.match_done(record, None if writer.outage else _leader(db, tournament_id))

        await _play_all(pending, play, concurrency)
        status = TournamentStatus.FINISHED
    finally:
        if writer is not None:  # what is played is stored before the status says so
            left = await writer.close(_FLUSH_TIMEOUT_S)
            if left:
                where = dump_unsaved(left, Path.cwd())
                status = TournamentStatus.INTERRUPTED
                unsaved = (f"{len(left)} finished match(es) could not be stored (the "
                           f"database is away); they are in {where}")
        if tournament_id is not None and locked:
            with contextlib.suppress(Exception):
                db.set_tournament_status(tournament_id, status)
        locks.close()
        if pool is not None:  # bots first, so their streams end before the server stops
            await pool.close()
        await server.stop(grace=0.5)
        shutil.rmtree(socket_dir, ignore_errors=True)
    if unsaved is not None:
        raise TournamentError(unsaved)
    assert tournament_id is not None
    return TournamentRun(tournament_id, resumed, played, total, status.value,
                         time.monotonic() - started)


async def _play_all(pending: Sequence[ScheduledMatch],
                    play: Callable[[ScheduledMatch], Awaitable[None]], concurrency: int) -> None:
    """Play every match, `concurrency` at once, in schedule order as far as the rule allows:
    two matches with the same deal never run at the same time for the same bot (two live
    processes of one bot could signal each other what they hold)."""
    queue = _rotation_major(pending)
    busy: set[tuple[int, int]] = set()
    running: dict[asyncio.Task[None], ScheduledMatch] = {}
    try:
        while queue or running:
            while queue and len(running) < concurrency:
                match = next((m for m in queue
                              if not any((m.seed, b) in busy for b in m.seat_bot_ids)), None)
                if match is None:
                    break
                queue.remove(match)
                busy.update((match.seed, b) for b in match.seat_bot_ids)
                running[asyncio.ensure_future(play(match))] = match
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                match = running.pop(task)
                busy.difference_update((match.seed, b) for b in match.seat_bot_ids)
                task.result()  # a failure stops the run (the others are cancelled below)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def _rotation_major(pending: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
    """Play rotation r of every game before rotation r+1 of any: consecutive matches of
    one bot then hold different deals, so the processes started ahead of need during
    one match can play the next (see BotPool.take: a process alive while its bot played
    a deal never plays that deal)."""
    def order(m: ScheduledMatch) -> tuple[int, int]:
        rotation = m.key.rsplit("-r", 1)[-1]
        return (int(rotation) if rotation.isdigit() else 0, pending.index(m))

    return sorted(pending, key=order)


async def _play_match(server: RefereeServer, pool: BotPool, writer: MatchWriter,
                      config: TournamentConfig, match: ScheduledMatch, seat_bots: list[str],
                      tournament_id: int, log_dir: Path | None) -> MatchRecord:
    """One match: fresh processes for its seats, played, explained, stored, stopped."""
    warms: list[WarmBot] = []
    try:
        for name in seat_bots:
            warms.append(await pool.take(name, match.seed))
    except BaseException:
        await asyncio.gather(*(pool.release(w) for w in warms), return_exceptions=True)
        raise
    for name in set(seat_bots):
        pool.begin(name, match.seed)
    try:
        return await _run_seated(server, pool, writer, config, match, seat_bots, warms,
                                 tournament_id, log_dir)
    finally:
        for name in set(seat_bots):
            pool.end(name, match.seed)


async def _run_seated(server: RefereeServer, pool: BotPool, writer: MatchWriter,
                      config: TournamentConfig, match: ScheduledMatch, seat_bots: list[str],
                      warms: list[WarmBot], tournament_id: int, log_dir: Path | None
                      ) -> MatchRecord:
    try:
        writer.db.mark_running(match.id)  # no await: a Ctrl-C cannot land half-way
    except StorageError as exc:
        if not is_outage(exc):
            raise
        try:
            await _while_away(writer, writer.db.mark_running, match.id)
        except BaseException:  # interrupted while waiting: it may have been marked
            writer.submit(StoredMatch(match.id, status=MatchStatus.ABORTED,
                                      reason="aborted: interrupted before it started"))
            raise
    handed: list[MatchRecord] = []
    # bots see an opaque id: the key (game, rotation) is the organiser's business
    wire_id = secrets.token_hex(8)
    try:
        record = await server.run_match(
            wire_id, Rules.from_options(match.rules), match.seed, seat_bots,
            config.time_control, tournament_id=tournament_id, key=match.key,
            on_record=handed.append,
            connections=[w.connection for w in warms if w.connection is not None],
        )
    except BaseException:
        # cut short (Ctrl-C, a failure elsewhere): store what was played as aborted
        for warm in warms:
            warm.process.kill()
        if handed:
            handed[0].match_id = match.id
            with contextlib.suppress(Exception):
                _store(writer, handed[0], warms, log_dir)
        raise
    record.match_id = match.id
    try:
        await _settle(warms, record)
        await _let_exit(warms)
        await asyncio.gather(*(pool.release(w) for w in warms))
    finally:  # a Ctrl-C now still stores the match: it is played
        _store(writer, record, warms, log_dir)
    return record


async def _while_away(writer: MatchWriter, call: Callable[..., object], *args: object) -> None:
    """A storage call, retried with back-off while the database is away (an outage)."""
    delay = 0.5
    while True:
        try:
            await writer.call(call, *args)
            return
        except StorageError as exc:
            if not is_outage(exc):
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 30.0)


async def _settle(warms: Sequence[WarmBot], record: MatchRecord) -> None:
    """Give the processes of disconnected seats a moment to exit, then say why they did."""
    lost = {f.seat for f in record.faults if f.kind is FaultKind.DISCONNECT}
    for seat in lost:
        process = warms[seat].process
        if process.returncode is None and not warms[seat].written_off:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1.0)
    for index, fault in enumerate(record.faults):
        warm = warms[fault.seat]
        process = warm.process
        if fault.kind is not FaultKind.DISCONNECT or process.breach or warm.written_off:
            continue
        if process.returncode is not None and fault.detail in _GENERIC_DISCONNECTS:
            record.faults[index] = dataclasses.replace(
                fault, detail=f"bot process {process.exit_summary()}")


_GENERIC_DISCONNECTS = ("stream ended", "stream cancelled")
_EXIT_GRACE_S = 2.0
_FLUSH_TIMEOUT_S = 60.0  # at the end, how long stored matches may wait for the database


async def _let_exit(warms: Sequence[WarmBot]) -> None:
    """End each seat's stream once its MatchEnd is written, and give its process a
    moment to read it and exit by itself (it is killed after that anyway)."""
    for warm in warms:
        if warm.connection is not None:
            warm.connection.retire()
    waits = [w.process.wait() for w in warms
             if not w.written_off and w.process.returncode is None]
    if waits:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), _EXIT_GRACE_S)


def _store(writer: MatchWriter, record: MatchRecord, warms: Sequence[WarmBot],
           log_dir: Path | None) -> None:
    """Queue the match, with each seat's captured output, for storing (and write the
    output to `log_dir`); the writer keeps retrying while the database is away."""
    stored = to_stored(record)
    for seat, warm in enumerate(warms):
        process = warm.process
        exit_line = warm.written_off or process.breach or (
            process.exit_summary() if process.exited_by_itself else "stopped after the match")
        stored.seat_logs.append(
            SeatLog(seat, process.output.text(), process.output.total, exit_line))
        if log_dir is not None:
            with contextlib.suppress(OSError):
                (log_dir / f"{record.key or record.match_id}-seat{seat}-{warm.bot}.log"
                 ).write_text(process.output.text())
    writer.submit(stored)


def _lock(locks: contextlib.ExitStack, db: Database, tournament_id: int) -> None:
    """Hold the tournament's lock until the run ends; TournamentError if another has it."""
    try:
        locks.enter_context(tournament_lock(db.engine, tournament_id))
    except TournamentBusy as exc:
        raise TournamentError(str(exc)) from None


def _find_tournament(config: TournamentConfig, db: Database, resume_id: int | None,
                     launch: Launch) -> TournamentInfo | None:
    """The tournament this configuration plays: the newest with the same identity, finished
    or not (or the one `--resume` names); None for a new one. Reads only."""
    identity = config_hash(config.to_json(launch))
    if resume_id is None:
        return db.find_tournament(identity)
    existing = db.get_tournament(resume_id)
    if existing is None:
        raise TournamentError(f"no tournament {resume_id} to resume")
    if existing.config_hash != identity:
        raise TournamentError(
            f"tournament {resume_id} was run with a different configuration; "
            "resume it with the same options (see `cfarena tournaments`)"
        )
    return existing


def _open_tournament(config: TournamentConfig, db: Database, found: int | None,
                     launch: Launch) -> tuple[int, list[ScheduledMatch]]:
    """The tournament to play (found again, or created and scheduled) and its pending
    matches. Without --seed the master seed comes from the OS's CSPRNG and is stored:
    no deal can be known before it is played."""
    if found is not None:
        db.set_tournament_status(found, TournamentStatus.RUNNING)
        return found, db.pending_matches(found)
    identity = config.to_json(launch)
    seed = config.seed if config.seed is not None else secrets.randbits(62)
    name = config.name or f"{_rules_label(config.rules)} {config.players}p round-robin"
    stored = {**identity, "seed": seed, "seed_fixed": config.seed is not None}
    tournament_id = db.create_tournament(name, stored, identity=identity)
    db.schedule_matches(tournament_id, plan_matches(config, _bot_ids(db, config), seed))
    return tournament_id, db.pending_matches(tournament_id)


def _rules_label(rules: Rules) -> str:
    """The preset and the options that differ from it: "standard spokes=4 rounds=half"."""
    preset = Rules.preset(rules.name).to_options()
    changed = [f"{key}={value}" for key, value in rules.to_options().items()
               if key != "preset" and preset.get(key) != value]
    return " ".join([rules.name, *changed])


def _bot_ids(db: Database, config: TournamentConfig) -> dict[str, int]:
    """The bots' ids (registered on first use; their processes get one-time passes, so
    the stored token is a random one nobody holds)."""
    return {bot.name: db.register_local_bot(bot.name, hash_token(new_token()), bot.describe())
            for bot in config.bots}


def _leader(db: Database, tournament_id: int) -> str | None:
    try:
        table = db.standings(tournament_id)
    except StorageError:  # the database is away: the progress line goes without
        return None
    return f"{table[0].name} ({table[0].elo:.0f})" if table else None
