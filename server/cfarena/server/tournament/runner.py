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

The run's parts: `config` (what defines a tournament), `stored_tournament`
(finding, creating, scheduling and locking it in storage), `match_queue` (the
order and concurrency of its matches), `match_play` (`MatchRoom`: one match,
from taking its processes to storing it) and `pool` (the bot processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cfarena.server.match_writer import MatchWriter, dump_unsaved
from cfarena.server.referee import MatchRecord, RefereeServer, TokenRegistry
from cfarena.server.storage import Database, ScheduledMatch, TournamentStatus
from cfarena.server.tournament.config import TournamentConfig, TournamentError
from cfarena.server.tournament.match_play import MatchRoom
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import BotPool, BotStartError, Launch, needed_processes
from cfarena.server.tournament.schedule import round_robin, seats_needed
from cfarena.server.tournament.stored_tournament import (
    bot_ids,
    find_tournament,
    leader,
    lock_tournament,
    open_tournament,
)

log = logging.getLogger("cfarena.tournament")

_FLUSH_TIMEOUT_S = 60.0  # at the end, how long stored matches may wait for the database


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
        found = None if new else find_tournament(config, db, resume_id, launch)
        if found is not None and found.status is TournamentStatus.FINISHED:
            status = TournamentStatus.FINISHED
            tournament_id = found.id
            total = len(db.finished_keys(found.id))
            return TournamentRun(found.id, False, 0, total, status.value,
                                 time.monotonic() - started, already_finished=True)
        if found is not None:
            lock_tournament(locks, db, found.id)
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
        tournament_id, pending = open_tournament(config, db, found_id, launch)
        if found_id is None:
            lock_tournament(locks, db, tournament_id)
            locked = True
        resumed = found_id is not None
        names = {bot_id: name for name, bot_id in bot_ids(db, config).items()}
        total = len(db.finished_keys(tournament_id)) + len(pending)
        sink.started(tournament_id, total, total - len(pending), resumed)
        lock = asyncio.Lock()
        writer = MatchWriter(db, log.warning)
        writer.start()
        room = MatchRoom(server, pool, writer, config.time_control, tournament_id, log_dir)

        async def play(match: ScheduledMatch) -> None:
            nonlocal played
            assert tournament_id is not None and writer is not None
            record = await room.play(match, [names[i] for i in match.seat_bot_ids])
            async with lock:
                played += 1
                sink.match_done(record, None if writer.outage else leader(db, tournament_id))

        await play_all(pending, play, concurrency)
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
