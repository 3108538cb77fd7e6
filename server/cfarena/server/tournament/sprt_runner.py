"""Running a bot test (`cfarena sprt NEW OLD`): deal groups, played like a tournament's
matches, until the sequential test decides.

A test is stored as a tournament of its own (`storage.sprt_store`; what its groups
are, how they are counted and scheduled: `sprt_test`): its matches are played by a
`TournamentPlayer` (fresh sandboxed processes per seat, stored and rated in one
transaction) and shown like any tournament's. Its deal groups are scheduled a batch of
`concurrency` groups at a time (fixed when the test is created), played seating by
seating: the matches of one seating (different deals) run at once, and between
seatings every bot process is stopped and the host's caches dropped
(`TournamentPlayer.enter_phase`), since NEW and OLD hold every seat of a group's deal.

On SQLite this process plays each batch, then counts its groups (`sprt_test.advance`)
and schedules the next until the test decides. On PostgreSQL the matches are jobs of
the database's queue, and this process is one local worker of it (as `run-tournament`
is): any `cfarena worker` on any machine takes some, and whichever worker stores a
batch's last match counts it and queues the next (`sprt_test.advance_queued`); this
process shows the test's progress until it decides. `queue_sprt` only creates the
test and queues its first batch, for workers to play.

Running the same configuration again resumes the test: counted groups are read back,
the matches of a group not counted yet are played (from their seeds: the same deals)
or found stored. A decided test is only reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cfarena.server.referee import MatchRecord
from cfarena.server.sprt.sequential import SprtStatus
from cfarena.server.storage import (
    Database,
    MatchStatus,
    ScheduledMatch,
    TournamentStatus,
    config_hash,
)
from cfarena.server.storage.sprt_store import SprtTestInfo
from cfarena.server.tournament import job_queue
from cfarena.server.tournament.config import TournamentError, host_defences
from cfarena.server.tournament.local_referee import LocalReferee, close_player
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.sprt_test import (
    SprtConfig,
    Step,
    advance,
    advance_queued,
    first_matches,
    stored_test,
)
from cfarena.server.tournament.stored_tournament import entrant_ids, lock_tournament, match_phases
from cfarena.server.tournament.tournament_player import TournamentPlayer

if TYPE_CHECKING:  # the queue (and procrastinate) load only on PostgreSQL
    import procrastinate

    from cfarena.server.tournament.worker import QueueWorker


class SprtProgress(Protocol):
    """What the CLI's progress display is told."""

    def started(self, test_id: int, status: SprtStatus, resumed: bool) -> None: ...

    def match_done(self, record: MatchRecord) -> None: ...

    def group_done(self, status: SprtStatus) -> None: ...


class _Quiet:
    def started(self, test_id: int, status: SprtStatus, resumed: bool) -> None:
        pass

    def match_done(self, record: MatchRecord) -> None:
        pass

    def group_done(self, status: SprtStatus) -> None:
        pass


@dataclass
class SprtRun:
    """What a finished (or stopped) run of a test did."""

    test_id: int
    tournament_id: int
    status: SprtStatus
    resumed: bool
    played: int  # matches played by this run
    wall_s: float
    already_finished: bool = False  # found decided: reported, nothing played


def create_test(config: SprtConfig, db: Database, launch: Launch, concurrency: int
                ) -> SprtTestInfo:
    """Store a new test (its entrants are registered next: `entrant_ids`; its first
    batch is scheduled by the first `advance`): the seed drawn unless fixed, `concurrency` deal
    groups per batch."""
    identity = config.to_json(launch)
    seed = config.seed if config.seed is not None else secrets.randbits(62)
    stored = {**identity, "seed": seed, "seed_fixed": config.seed is not None,
              "defences": host_defences(launch),
              "batch": {"groups": concurrency, "matches_per_group": config.matches_per_group}}
    return db.create_sprt_test(f"sprt {config.new.name} vs {config.old.name}",
                               config.new.name, config.old.name, stored,
                               config_hash(identity))


async def queue_sprt(config: SprtConfig, db: Database, launch: Launch, *,
                     concurrency: int = 2) -> tuple[SprtTestInfo, int]:
    """On PostgreSQL: create (or find again) the test and queue its next deal groups for
    `cfarena worker`s, without playing; the test and how many jobs were queued now."""
    config.rules.resolve(config.players)
    if not job_queue.uses_queue(db.engine):
        raise TournamentError("queueing a bot test for workers needs PostgreSQL (--db "
                              "postgresql+psycopg://...)")
    job_queue.install_schema(db.engine)
    info = db.find_sprt_test(config_hash(config.to_json(launch)))
    if info is None:
        info = create_test(config, db, launch, concurrency)
    # also when found: a run that died between storing the test and this registers them
    entrant_ids(db, info.tournament_id, config.tournament())
    app = job_queue.new_app(db.engine)
    async with app.open_async():
        queued = await _queue_test(app, db, config, info)
    return info, queued


async def _queue_test(app: procrastinate.App, db: Database, config: SprtConfig, info: SprtTestInfo
                      ) -> int:
    """Count and schedule what is due (`advance_queued`), and queue every pending match
    that has no job (resume: a worker died between scheduling and queueing); how many
    jobs were queued."""
    before = set(await asyncio.to_thread(job_queue.queued_matches, db.engine,
                                         info.tournament_id, ("todo", "doing")))
    step = await advance_queued(app, db, config, info.id)
    if step.decided:
        return 0
    # and the matches aborted before (their jobs failed for good): played again now
    pending = await asyncio.to_thread(db.pending_matches, info.tournament_id)
    phases = await asyncio.to_thread(match_phases, db, info.tournament_id)
    await job_queue.enqueue(app, db.engine, info.tournament_id, pending, phases)
    after = await asyncio.to_thread(job_queue.queued_matches, db.engine, info.tournament_id,
                                    ("todo", "doing"))
    return len(set(after) - before)


async def run_sprt(config: SprtConfig, db: Database, launch: Launch, *,
                   concurrency: int = 2, progress: SprtProgress | None = None,
                   log_dir: Path | None = None) -> SprtRun:
    """Play (or resume) a test until its verdict; see the module docstring. A test
    another process is playing is refused (TournamentError) on SQLite, joined as one
    more worker on the job queue."""
    sink = progress or _Quiet()
    config.rules.resolve(config.players)  # RulesError before anything starts
    started = time.monotonic()
    found = db.find_sprt_test(config_hash(config.to_json(launch)))
    if found is not None and found.decided:
        return SprtRun(found.id, found.tournament_id, stored_test(config, db, found).status(),
                       False, 0, time.monotonic() - started, already_finished=True)
    referee = LocalReferee(db, launch, concurrency, log_dir)
    player: TournamentPlayer | None = None
    info = found
    status = TournamentStatus.INTERRUPTED
    unsaved: str | None = None
    locks = contextlib.ExitStack()
    locked = False  # this run holds the test's tournament lock (only then may it set its status)
    played = [0]
    try:
        server = await referee.start()
        queued = referee.worker is not None
        if found is not None:
            locked = _lock_test(locks, db, found.tournament_id, queued)
        tournament = config.tournament()
        # bots first: one that does not start stops the run before a test is stored
        # (acknowledge: a match is stored before its group is looked at)
        player = TournamentPlayer(server, db, tournament, launch, concurrency, log_dir,
                                  acknowledge=True, host=referee.host_reset())
        # what is started ahead is what the phases of the first matches can use (later
        # batches add theirs: `TournamentPlayer.schedule`); one batch's worth if unknown
        first = await asyncio.to_thread(first_matches, db, config, found, concurrency)
        if first.keys:
            await player.start(first.seatings, first.order, first.keys)
        else:
            await player.start(list(config.seatings) * concurrency)
        if info is None:  # or the one another process created meanwhile
            info = create_test(config, db, launch, concurrency)
            locked = _lock_test(locks, db, info.tournament_id, queued)
        if locked:
            db.set_tournament_status(info.tournament_id, TournamentStatus.RUNNING)
        ids = entrant_ids(db, info.tournament_id, tournament)
        player.attach(info.tournament_id, {bot_id: name for name, bot_id in ids.items()},
                      first.phases)
        sink.started(info.id, stored_test(config, db, info).status(), found is not None)
        if referee.worker is not None:
            await _play_queued(referee.worker, db, config, info, player, sink, played)
        else:
            await _play_local(db, config, info, player, sink, concurrency, played)
        status = TournamentStatus.FINISHED
    finally:
        try:  # what is played is stored before the status says so
            unsaved = await close_player(player)
            if unsaved is not None:
                status = TournamentStatus.INTERRUPTED
            if info is not None and locked:
                with contextlib.suppress(Exception):
                    db.set_tournament_status(info.tournament_id, status)
        finally:  # also when a Ctrl-C lands in the clean-up above
            locks.close()
            await referee.stop()
    if unsaved is not None:
        raise TournamentError(unsaved)
    assert info is not None
    return SprtRun(info.id, info.tournament_id, stored_test(config, db, info).status(),
                   found is not None, played[0], time.monotonic() - started)


def _lock_test(locks: contextlib.ExitStack, db: Database, tournament_id: int,
               queued: bool) -> bool:
    """Hold the test's tournament lock (its holder sets the tournament's status); whether
    this run holds it. On the job queue a test another `cfarena sprt` holds is joined
    as one more worker (two terminals or machines on one database: one test); without
    it, TournamentError."""
    try:
        lock_tournament(locks, db, tournament_id)
    except TournamentError:
        if not queued:
            raise
        return False
    return True


def _tell(sink: SprtProgress, step: Step) -> None:
    if step.counted:
        sink.group_done(step.test.status())


async def _play_local(db: Database, config: SprtConfig, info: SprtTestInfo,
                      player: TournamentPlayer, sink: SprtProgress, concurrency: int,
                      played: list[int]) -> None:
    """SQLite: play the scheduled groups batch by batch, counting and scheduling after
    each, until the test decides."""
    async def play(match: ScheduledMatch) -> None:
        sink.match_done(await player.play(match))
        played[0] += 1

    # no match is playing between batches, so a match of an earlier phase (its group
    # uncounted: the referee's stalls voided it) is played after a reset as well, not
    # after its deal's other rotations of the later phases
    enter = functools.partial(player.enter_phase, earlier=True)

    while True:
        step = await asyncio.to_thread(advance, db, config, info.id)
        _tell(sink, step)
        if step.decided:
            return
        pending = await asyncio.to_thread(db.pending_matches, info.tournament_id)
        if not pending:
            raise TournamentError(f"bot test {info.id}: no match to play and no deal group "
                                  "to count")
        player.phases = await asyncio.to_thread(match_phases, db, info.tournament_id)
        player.schedule(pending)  # a batch scheduled since the start: its seats
        await play_all(pending, play, concurrency, player.phases, enter)


@dataclass
class _Told:
    """The local worker's matches and the test's counted groups, told to the sink."""

    sink: SprtProgress
    played: list[int]

    def match_done(self, record: MatchRecord, leader: str | None) -> None:
        self.played[0] += 1
        self.sink.match_done(record)


async def _play_queued(worker: QueueWorker, db: Database, config: SprtConfig,
                       info: SprtTestInfo, player: TournamentPlayer, sink: SprtProgress,
                       played: list[int]) -> None:
    """PostgreSQL: queue what is due and take the test's jobs until it has decided and
    none is left (other workers take some meanwhile; any of them counts groups)."""
    from cfarena.server.tournament.worker import queue_empty

    worker.adopt(info.tournament_id, player)
    worker.sink = _Told(sink, played)
    async with worker.app.open_async():
        await _queue_test(worker.app, db, config, info)
    shown = [db.get_sprt_test(info.id)]

    def done() -> bool:  # in a worker thread, every poll
        now = db.get_sprt_test(info.id)
        if now is not None and shown[0] is not None and now.groups != shown[0].groups:
            sink.group_done(stored_test(config, db, now).status())
        shown[0] = now
        if now is None or not queue_empty(db, info.tournament_id):
            return now is None
        # no job left: decided, or stuck on a match whose job failed for good (a bot
        # that cannot start): undecided with no match still to begin (`advance_queued`
        # gives every scheduled match a job)
        return now.decided or not any(m.status is MatchStatus.SCHEDULED
                                      for m in db.pending_matches(info.tournament_id))

    worker.only = info.tournament_id
    await worker.run(until=done)
    final = db.get_sprt_test(info.id)
    if final is None or not final.decided:
        failed = job_queue.queued_matches(db.engine, info.tournament_id, ("failed",))
        raise TournamentError(f"bot test {info.id} stopped undecided"
                              + (f": {len(failed)} match job(s) failed (see the log above)"
                                 if failed else "")
                              + "; run the same command again to go on")


__all__ = ["SprtConfig", "SprtProgress", "SprtRun", "queue_sprt", "run_sprt"]
