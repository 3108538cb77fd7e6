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

On PostgreSQL the run is "schedule, then run one local worker": the pending
matches become jobs of the database's queue (`job_queue`) and this process takes
them like any `cfarena worker` (`worker`), while workers on other machines may take
some too. On SQLite the local worker takes them straight from the schedule
(`match_queue`). Either way a match is played by a `TournamentPlayer`.

The run's parts: `config` (what defines a tournament), `stored_tournament`
(finding, creating, scheduling and locking it in storage), `match_queue` (the
order and concurrency of its matches on one machine), `job_queue` and `worker`
(the same on PostgreSQL, across machines), `tournament_player` (a tournament's bots and
room on this machine), `match_room` (`MatchRoom`: one match, from taking its
processes to storing it) and `pool` (the bot processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cfarena.server.referee import MatchRecord, RefereeServer, TokenRegistry
from cfarena.server.sandbox.host_reset import HostReset, claim_host_reset
from cfarena.server.storage import Database, ScheduledMatch, StorageError, TournamentStatus
from cfarena.server.storage.match_writer import dump_unsaved
from cfarena.server.tournament import job_queue
from cfarena.server.tournament.config import TournamentConfig, TournamentError
from cfarena.server.tournament.job_queue import enqueue, install_schema, new_app, uses_queue
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import round_robin
from cfarena.server.tournament.stored_tournament import (
    bot_ids,
    find_tournament,
    leader,
    lock_tournament,
    match_phases,
    open_tournament,
)
from cfarena.server.tournament.tournament_player import TournamentPlayer

if TYPE_CHECKING:  # the queue's worker (and procrastinate) load only on PostgreSQL
    from cfarena.server.tournament.worker import QueueWorker

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



async def schedule_tournament(config: TournamentConfig, db: Database, launch: Launch, *,
                              new: bool = False) -> tuple[int, int, int | None]:
    """Create (or find again) the tournament and schedule its matches without playing
    them; on PostgreSQL also queue them as jobs for `cfarena worker`s. Returns its id, its
    number of matches and the jobs queued now (None on SQLite: no queue)."""
    config.rules.resolve(config.players)
    found = None if new else find_tournament(config, db, None, launch)
    if found is not None and found.status is TournamentStatus.FINISHED:
        raise TournamentError(f"tournament {found.id} with this configuration is finished; "
                              "--new schedules another")
    tournament_id, pending = open_tournament(config, db, None if found is None else found.id,
                                             launch)
    total = len(db.finished_keys(tournament_id)) + len(pending)
    if not uses_queue(db.engine):
        return tournament_id, total, None
    install_schema(db.engine)
    app = new_app(db.engine)
    async with app.open_async():
        queued = await enqueue(app, db.engine, tournament_id, pending,
                               match_phases(db, tournament_id))
    return tournament_id, total, queued


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
    queued = uses_queue(db.engine)
    if queued:
        install_schema(db.engine)
    from cfarena.server.tournament.worker import QueueWorker, WorkerOptions

    worker = QueueWorker(db, WorkerOptions(
        concurrency=concurrency, binds=launch.binds, connect_timeout=launch.connect_timeout,
        log_dir=log_dir)) if queued else None
    if worker is not None:
        server = await worker.start()
    else:
        socket_dir = Path(tempfile.mkdtemp(prefix="cfarena-referee-"))  # 0700: the referee's
        server = RefereeServer(TokenRegistry(), port=None, unix_socket=socket_dir / "arena.sock")
        await server.start()
    if on_server is not None:
        on_server(server)
    status = TournamentStatus.INTERRUPTED
    tournament_id: int | None = None
    resumed = False
    total = 0
    counter = _Counter(sink, db)
    player: TournamentPlayer | None = None
    unsaved: str | None = None
    locks = contextlib.ExitStack()
    host: HostReset | None = None  # the local run's (a worker releases its own)
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
        # Bots first: a bot that does not start or connect stops the run before
        # any match is played.
        host = _host_reset(worker)
        player = TournamentPlayer(server, db, config, launch, concurrency, log_dir,
                                  acknowledge=queued, host=host)
        await player.start(seatings)
        tournament_id, pending = open_tournament(config, db, found_id, launch)
        if found_id is None:
            lock_tournament(locks, db, tournament_id)
            locked = True
        resumed = found_id is not None
        player.attach(tournament_id,
                      {bot_id: name for name, bot_id in bot_ids(db, config).items()})
        total = len(db.finished_keys(tournament_id)) + len(pending)
        sink.started(tournament_id, total, total - len(pending), resumed)
        counter.player, counter.tournament_id = player, tournament_id
        if worker is not None:
            # schedule, then run one local worker: the same jobs any `cfarena worker` takes
            await _play_queued(worker, db, tournament_id, pending, player, counter)
        else:  # SQLite: the local worker takes its matches straight from the schedule
            async def play(match: ScheduledMatch) -> None:
                assert player is not None
                counter.match_done(await player.play(match), None)

            await play_all(pending, play, concurrency, player.phases, player.enter_phase)
        status = TournamentStatus.FINISHED
    finally:
        try:
            # what is played is stored before the status says so
            left = await player.close(_FLUSH_TIMEOUT_S) if player is not None else []
            await counter.flush()  # every match's progress line is out
            if left:
                where = dump_unsaved(left, Path.cwd())
                status = TournamentStatus.INTERRUPTED
                unsaved = (f"{len(left)} finished match(es) could not be stored (the "
                           f"database is away); they are in {where}")
            if status is TournamentStatus.FINISHED and worker is None \
                    and tournament_id is not None:
                # a match aborted in play (the referee's stalls voided it each time it
                # was played) is not finished: a rerun plays it
                with contextlib.suppress(StorageError):
                    aborted = len(await asyncio.to_thread(db.pending_matches, tournament_id))
                    if aborted:
                        status = TournamentStatus.INTERRUPTED
                        unsaved = (f"{aborted} match(es) were aborted in play (see the log "
                                   "above); run the same command again to play them")
            if tournament_id is not None and locked:
                with contextlib.suppress(Exception):
                    db.set_tournament_status(tournament_id, status)
        finally:  # also when a Ctrl-C lands in the clean-up above: the referee stops
            locks.close()
            if worker is not None:
                await worker.close()
            else:
                await server.stop(grace=0.5)
                shutil.rmtree(socket_dir, ignore_errors=True)
                if host is not None:
                    host.release()
    if unsaved is not None:
        raise TournamentError(unsaved)
    assert tournament_id is not None
    return TournamentRun(tournament_id, resumed, counter.played, total, status.value,
                         time.monotonic() - started)


def _host_reset(worker: QueueWorker | None) -> HostReset | None:
    """What drops this host's caches between phases (the worker's, if there is one);
    None where it cannot be done."""
    if worker is not None:
        return worker.host
    return claim_host_reset()  # released when the run ends


@dataclass
class _Counter:
    """Counts the matches this run played and tells the progress sink, with the leader
    (read in a worker thread: the referee's loop never waits for the database)."""

    sink: ProgressSink
    db: Database
    player: TournamentPlayer | None = None
    tournament_id: int | None = None
    played: int = 0
    _told: asyncio.Task[None] | None = None  # the latest line, in order after the others

    def match_done(self, record: MatchRecord, _leader: str | None) -> None:
        self.played += 1
        self._told = asyncio.get_running_loop().create_task(self._tell(record, self._told))

    async def _tell(self, record: MatchRecord, before: asyncio.Task[None] | None) -> None:
        writer = None if self.player is None else self.player.writer
        away = writer is None or writer.outage or self.tournament_id is None
        best = None
        if not away and self.tournament_id is not None:
            best = await asyncio.to_thread(leader, self.db, self.tournament_id)
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        self.sink.match_done(record, best)

    async def flush(self) -> None:
        """Wait until every match's line is told."""
        if self._told is not None:
            await asyncio.gather(self._told, return_exceptions=True)


async def _play_queued(worker: QueueWorker, db: Database, tournament_id: int,
                       pending: Sequence[ScheduledMatch], player: TournamentPlayer,
                       counter: _Counter) -> None:
    """Queue the pending matches and take this tournament's jobs until none is left
    (other workers may take some of them meanwhile)."""
    from cfarena.server.tournament.worker import queue_empty

    worker.adopt(tournament_id, player)
    worker.sink = counter
    async with worker.app.open_async():
        await enqueue(worker.app, db.engine, tournament_id, pending, player.phases)
    worker.only = tournament_id
    await worker.run(until=lambda: queue_empty(db, tournament_id))
    if not db.pending_matches(tournament_id):
        return
    failed = job_queue.queued_matches(db.engine, tournament_id, ("failed",))
    if failed:
        raise TournamentError(f"{len(failed)} match job(s) failed (see the log above); run "
                              "the same command again to retry them")
