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

`run_tournament` itself is four steps, one job each: find the tournament (a finished
one is only reported), start where matches are played (`local_referee`: its own referee,
or the queue's local worker), then `_Run`: open it (lock, start the bots, create or
reopen it; a new one's schedule is computed once, `NewTournament`), play its
pending matches, and close it (store what is played, then write its status).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cfarena.server.referee import MatchRecord, RefereeServer
from cfarena.server.standings import leader
from cfarena.server.storage import (
    Database,
    ScheduledMatch,
    StorageError,
    StoredMatch,
    TournamentInfo,
    TournamentStatus,
)
from cfarena.server.tournament import job_queue
from cfarena.server.tournament.config import TournamentConfig, TournamentError
from cfarena.server.tournament.job_queue import enqueue, install_schema, new_app, uses_queue
from cfarena.server.tournament.local_referee import LocalReferee, close_player
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import phases as schedule_phases
from cfarena.server.tournament.stored_tournament import (
    NewTournament,
    create_tournament,
    entrant_ids,
    find_tournament,
    lock_tournament,
    match_phases,
    reopen_tournament,
)
from cfarena.server.tournament.tournament_player import TournamentPlayer

if TYPE_CHECKING:  # the queue's worker (and procrastinate) load only on PostgreSQL
    from cfarena.server.tournament.worker import QueueWorker

log = logging.getLogger("cfarena.tournament")

_LEADER_WAIT_S = 5.0  # a progress line's leader waits this long for its match to be stored


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
    if found is None:
        tournament_id, pending = create_tournament(config, db, launch,
                                                   NewTournament.of(config))
    else:
        tournament_id, pending = found.id, reopen_tournament(db, found.id)
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
    config.rules.resolve(config.players)  # RulesError before anything starts
    launch = launch or Launch(connect_timeout=connect_timeout)
    started = time.monotonic()
    found = None if new else find_tournament(config, db, resume_id, launch)
    if found is not None and found.status is TournamentStatus.FINISHED:
        return TournamentRun(found.id, False, 0, len(db.finished_keys(found.id)),
                             TournamentStatus.FINISHED.value, time.monotonic() - started,
                             already_finished=True)
    referee = LocalReferee(db, launch, concurrency, log_dir)
    server = await referee.start()
    run = _Run(config, db, launch, referee, _Counter(progress or _Quiet(), db))
    try:
        if on_server is not None:
            on_server(server)
        try:
            pending = await run.open(server, found)
            await run.play(pending)
        finally:
            await run.close()
    finally:  # also when a Ctrl-C lands in the clean-up above: the referee stops
        await referee.stop()
    if run.unsaved is not None:
        raise TournamentError(run.unsaved)
    assert run.tournament_id is not None
    return TournamentRun(run.tournament_id, run.resumed, run.counter.played, run.total,
                         run.status.value, time.monotonic() - started)


@dataclass
class _Run:
    """One run of one tournament: opened (found again or created, locked, its bots
    started), played, and closed (what is played stored, then its status)."""

    config: TournamentConfig
    db: Database
    launch: Launch
    referee: LocalReferee
    counter: _Counter
    tournament_id: int | None = None
    resumed: bool = False
    total: int = 0
    status: TournamentStatus = TournamentStatus.INTERRUPTED
    unsaved: str | None = None  # why the run ends with an error after its clean-up
    player: TournamentPlayer | None = None
    locks: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    locked: bool = False  # this run holds its tournament's lock (only then may it write)

    async def open(self, server: RefereeServer, found: TournamentInfo | None
                   ) -> list[ScheduledMatch]:
        """The tournament's pending matches, its bots started. Bots first: a bot that
        does not start or connect stops the run before any match is played and before
        a new tournament is stored."""
        db, referee = self.db, self.referee
        created: NewTournament | None = None
        stored: dict[str, int] | None = None  # a resumed tournament's match phases
        if found is not None:
            self._lock(found.id)
            names = db.tournament_bots(found.id)
            waiting = db.pending_matches(found.id)
            seatings = [[names[i] for i in m.seat_bot_ids] for m in waiting]
            stored = match_phases(db, found.id)
            phases = [stored.get(m.key, 0) for m in waiting]
        else:
            created = NewTournament.of(self.config)
            seatings = [list(m.seats) for m in created.plan]
            planned = schedule_phases((m.key, m.seed, m.seats) for m in created.plan)
            phases = [planned[m.key] for m in created.plan]
        self.player = TournamentPlayer(
            server, db, self.config, self.launch, referee.concurrency, referee.log_dir,
            acknowledge=referee.worker is not None, host=referee.host_reset())
        await self.player.start(seatings, phases)
        if created is not None:
            self.tournament_id, pending = create_tournament(self.config, db, self.launch,
                                                            created)
            self._lock(self.tournament_id)
        else:
            assert found is not None
            self.tournament_id, pending = found.id, reopen_tournament(db, found.id)
            self.resumed = True
        self.player.attach(self.tournament_id, {bot_id: name for name, bot_id
                                                in entrant_ids(db, self.tournament_id,
                                                               self.config).items()},
                           stored)
        self.total = len(db.finished_keys(self.tournament_id)) + len(pending)
        self.counter.sink.started(self.tournament_id, self.total, self.total - len(pending),
                                  self.resumed)
        self.counter.attach(self.player, self.tournament_id)
        return pending

    def _lock(self, tournament_id: int) -> None:
        lock_tournament(self.locks, self.db, tournament_id)
        self.locked = True

    async def play(self, pending: Sequence[ScheduledMatch]) -> None:
        """Play the pending matches: on PostgreSQL schedule them, then run one local
        worker (the same jobs any `cfarena worker` takes); on SQLite the local worker
        takes them straight from the schedule."""
        player, counter = self.player, self.counter
        assert player is not None and self.tournament_id is not None
        worker = self.referee.worker
        if worker is not None:
            await _play_queued(worker, self.db, self.tournament_id, pending, player, counter)
        else:
            async def play(match: ScheduledMatch) -> None:
                counter.match_done(await player.play(match), None)

            await play_all(pending, play, self.referee.concurrency, player.phases,
                           player.enter_phase)
        self.status = TournamentStatus.FINISHED

    async def close(self) -> None:
        """Store what is played before the status says so; then write the status and
        let the lock go."""
        try:
            unsaved = await close_player(self.player)
            await self.counter.flush()  # every match's progress line is out
            if unsaved is not None:
                self.status = TournamentStatus.INTERRUPTED
                self.unsaved = unsaved
            await self._unfinished_by_aborts()
            if self.tournament_id is not None and self.locked:
                with contextlib.suppress(Exception):
                    self.db.set_tournament_status(self.tournament_id, self.status)
        finally:
            self.locks.close()

    async def _unfinished_by_aborts(self) -> None:
        """A match aborted in play (the referee's stalls voided it each time it was
        played) is not finished: the local run is interrupted and a rerun plays it."""
        if self.status is not TournamentStatus.FINISHED or self.referee.worker is not None \
                or self.tournament_id is None:
            return
        with contextlib.suppress(StorageError):
            aborted = len(await asyncio.to_thread(self.db.pending_matches, self.tournament_id))
            if aborted:
                self.status = TournamentStatus.INTERRUPTED
                self.unsaved = (f"{aborted} match(es) were aborted in play (see the log "
                                "above); run the same command again to play them")


@dataclass
class _Counter:
    """Counts the matches this run played and tells the progress sink, with the leader
    of the standings once the match is stored (read in a worker thread: the referee's
    loop never waits for the database), so that the last line's leader is the final
    table's."""

    sink: ProgressSink
    db: Database
    player: TournamentPlayer | None = None
    tournament_id: int | None = None
    played: int = 0
    _told: asyncio.Task[None] | None = None  # the latest line, in order after the others
    _written: set[str] = field(default_factory=set)  # stored matches not told yet
    _waiting: dict[str, asyncio.Future[None]] = field(default_factory=dict)

    def attach(self, player: TournamentPlayer, tournament_id: int) -> None:
        """Tell the lines of `player`'s matches (tournament `tournament_id`), each once
        its writer has stored it."""
        self.player, self.tournament_id = player, tournament_id
        if player.writer is not None:
            player.writer.on_written.append(self._stored)

    def _stored(self, record: StoredMatch) -> None:
        future = self._waiting.pop(record.match_id, None)
        if future is None:
            self._written.add(record.match_id)
        elif not future.done():
            future.set_result(None)

    async def _wait_stored(self, match_id: str) -> bool:
        """Whether match `match_id` is stored within `_LEADER_WAIT_S` (a line waits no
        longer for its leader)."""
        if match_id in self._written:
            self._written.discard(match_id)
            return True
        future = self._waiting.setdefault(match_id,
                                          asyncio.get_running_loop().create_future())
        try:
            await asyncio.wait_for(future, _LEADER_WAIT_S)
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting.pop(match_id, None)

    def match_done(self, record: MatchRecord, _leader: str | None) -> None:
        self.played += 1
        self._told = asyncio.get_running_loop().create_task(self._tell(record, self._told))

    async def _tell(self, record: MatchRecord, before: asyncio.Task[None] | None) -> None:
        writer = None if self.player is None else self.player.writer
        best = None
        if (writer is not None and not writer.outage and self.tournament_id is not None
                and await self._wait_stored(record.match_id)):
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
