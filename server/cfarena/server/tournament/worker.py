"""A queue worker: takes match jobs from PostgreSQL, plays them on its own referee with
its own sandboxed bot processes, stores them, and acknowledges the jobs.

`cfarena worker --db URL` runs one on any machine; `run-tournament` on PostgreSQL runs
one in its own process for its tournament (`only`), so there is one way to play a
match job. The worker:

- registers with procrastinate and heartbeats (`heartbeat_s`); a worker silent for
  `stalled_s` is taken for dead, and every worker puts its jobs back in the queue
  (`job_queue.retry_stalled`), to be played from a fresh start by whoever takes them:
  never its own jobs, and only once it has been in touch with the database for
  `stalled_s` itself (after an outage, every worker gets that long to beat again);
- plays each match under the lease `mark_running` gives it: a worker that was only
  frozen past `stalled_s` finds its match's lease revoked (or held by the worker
  that plays it again) when it wakes: its copy is not stored (`LeaseLost`, one line),
  and it leaves the job alone (`queue_link.SteadyJobManager` finishes or retries a
  job only while this worker holds it): the copy played under the valid lease is the
  match's;
- keeps one `TournamentPlayer` per tournament it plays (its bots' warm processes),
  built from the tournament as stored: the bot commands must exist on this machine;
- acknowledges a job only once its match is stored (one transaction: result, logs,
  ratings); a match found finished is acknowledged without playing it;
- plays a tournament phase by phase (`schedule.phases`): a job whose match belongs to a
  phase after one not finished everywhere goes back to the queue for a second; the
  first match of a later phase it plays stops its bot processes of that tournament,
  and those of its other tournaments not in a match, and drops the host's caches
  (`TournamentPlayer.enter_phase`). It holds the host's players' lock while it plays
  (`HostReset.claim`): the reset is claimed only where no other cfarena process plays
  on the host, nor another of its tournaments had a match in play (docs/WORKERS.md);
- when the database goes away, finishes the matches it is playing, keeps their records
  until the database is back (nothing is half-written: a record is one transaction),
  acknowledges their jobs then, and takes jobs again: it stays in the queue throughout,
  with its worker id and its jobs (`queue_link`); one line says the queue is away, one
  that it is back (the stored records' writer is told to try again at once);
- plays a bot test's matches (`cfarena sprt`, `sprt_test`) like a tournament's, and
  after each it stores (or finds stored: its worker died before counting it) counts
  the test's finished deal groups, decides, and queues the next batch
  (`sprt_test.advance_queued`: once, whichever worker gets there first); a job of a
  decided test is not played (`mark_running` refuses it, also when the test decides
  after the worker looked; its match is aborted, "the test decided"), and the
  phases of a batch scheduled after this worker started on the test are read again;
- a job that fails for good (`MatchRetry`) leaves its match aborted with the reason
  (a rerun of the tournament queues it again); `unfinished` tells `--until-done` which
  tournaments it took jobs of were left unfinished, and marks them interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import procrastinate
from procrastinate.worker import Worker

from cfarena.match.abort_reason import AbortReason
from cfarena.server.backoff import Backoff
from cfarena.server.referee import MatchRecord, RefereeServer, TokenRegistry
from cfarena.server.sandbox.host_reset import HostReset, claim_host_reset
from cfarena.server.storage import Database, LeaseLost, StorageError, TournamentStatus
from cfarena.server.storage.connect import one_line
from cfarena.server.storage.match_writer import is_outage
from cfarena.server.tournament import job_queue, queue_link
from cfarena.server.tournament.config import TournamentError
from cfarena.server.tournament.local_referee import close_player
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.sprt_test import (
    DECIDED,
    SprtConfig,
    advance_queued,
    stored_sprt_config,
)
from cfarena.server.tournament.stored_tournament import local_files_problem, match_phases
from cfarena.server.tournament.tournament_player import TournamentPlayer, stored_config

log = logging.getLogger("cfarena.worker")

# joining the queue again after a failure: the first wait, and the longest
_REJOIN_FIRST_S = 0.5
_REJOIN_MAX_S = 4.0


class MatchCut(Exception):
    """A match job cut short by `QueueWorker.halt` (it is retried)."""


class PhaseNotOpen(Exception):
    """A match job taken before every match of the earlier phases is finished."""


class DatabaseAway(Exception):
    """A match job cut short because the database went away (not the match's fault)."""


class MatchRetry(procrastinate.BaseRetryStrategy):
    """When a match job goes back to the queue:

    - cut by `QueueWorker.halt` (`MatchCut`: its worker was stopped, not its fault), or
      played under a lease that was taken from its worker (`LeaseLost`; the job is
      put back only if that worker still holds it: `queue_link.SteadyJobManager`): at
      once, however many attempts its job has had, so a job is never marked failed
      because workers were stopped or stalled;
    - taken too early (`PhaseNotOpen`), or cut short by a database outage
      (`DatabaseAway`): in `wait_s`, as often as it takes;
    - failed: up to `retries` times, 2 s later.

    procrastinate counts all of these in a job's attempts, so failures are counted
    here, by each worker (the one that saw the first failures may not see the next).
    `last_try` says whether a failure now is the job's last."""

    def __init__(self, wait_s: float, retries: int = 3) -> None:
        self.wait_s = wait_s
        self.retries = retries
        self.failures: dict[int | None, int] = {}

    def get_retry_decision(self, *, exception: BaseException, job: procrastinate.jobs.Job
                           ) -> procrastinate.RetryDecision | None:
        if isinstance(exception, MatchCut | LeaseLost):
            return procrastinate.RetryDecision(retry_in={"seconds": 0})
        if isinstance(exception, PhaseNotOpen | DatabaseAway):
            return procrastinate.RetryDecision(
                retry_at=datetime.now(UTC) + timedelta(seconds=self.wait_s))
        failed = self.failures[job.id] = self.failures.get(job.id, 0) + 1
        if failed > self.retries:
            return None
        return procrastinate.RetryDecision(retry_in={"seconds": 2})

    def last_try(self, job: procrastinate.jobs.Job) -> bool:
        """Whether a failure of `job` now would not be retried."""
        return self.failures.get(job.id, 0) >= self.retries


class MatchSink(Protocol):
    def match_done(self, record: MatchRecord, leader: str | None) -> None: ...


@dataclass
class WorkerOptions:
    concurrency: int = 2
    heartbeat_s: float = 2.0  # how often the worker says it is alive
    stalled_s: float = 10.0  # silent this long: dead, its jobs go back to the queue
    poll_s: float = 1.0  # how often it looks for jobs (besides LISTEN/NOTIFY)
    binds: tuple[Path, ...] = ()  # extra read-only paths for every sandbox
    connect_timeout: float = 30.0
    log_dir: Path | None = None


@dataclass
class WorkerStats:
    played: int = 0
    skipped: int = 0  # jobs whose match was already stored
    deferred: int = 0  # jobs put back (or dropped) while an earlier phase was unfinished
    restarts: int = 0  # times joining the queue failed and was tried again (database away)
    match_s: float = 0.0  # time playing and storing matches (the rest is the queue's)
    store_s: float = 0.0  # of which: waiting for the store (one transaction per match)
    unsaved: list[str] = field(default_factory=list)


class QueueWorker:
    """One worker process's jobs: see the module docstring."""

    def __init__(self, db: Database, options: WorkerOptions, *, only: int | None = None,
                 sink: MatchSink | None = None) -> None:
        self.db = db
        self.options = options
        self.only = only
        self.sink = sink
        self.stats = WorkerStats()
        self.players: dict[int, TournamentPlayer] = {}
        self._starting: dict[int, asyncio.Lock] = {}
        self._server: RefereeServer | None = None
        self._socket_dir: Path | None = None
        self._worker: Worker | None = None
        self._stop = asyncio.Event()
        self._jobs: set[asyncio.Task[object]] = set()  # the jobs being played
        self._halted = False
        self.touched: set[int] = set()  # the tournaments it took jobs of
        self.tests: dict[int, tuple[int, SprtConfig] | None] = {}  # tournament -> its test
        self.gave_up: dict[int, str] = {}  # tournament -> why a job of it failed for good
        self._said: set[str] = set()  # failures said once (a bot that does not start...)
        # drops this host's caches between a tournament's phases (unless it `cannot`),
        # holding the host's players' lock while this worker plays (from `start`)
        self.host: HostReset | None = None
        quiet_queue_logs()
        self.app = job_queue.new_app(db.engine)
        self.queue = queue_link.SteadyJobManager(
            self.app.connector, say=log.warning, retry_s=options.poll_s,
            give_up=lambda: self._halted)
        self.queue.on_back.append(self._retry_stores)
        self.app.job_manager = self.queue
        self._pool = queue_link.null_pool(job_queue.conninfo(db.engine))
        self.retry = MatchRetry(self.options.poll_s)
        self.app.task(name=job_queue.TASK, pass_context=True, retry=self.retry)(self._job)

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> RefereeServer:
        """The worker's referee (on a Unix socket in a private directory)."""
        self._socket_dir = Path(tempfile.mkdtemp(prefix="cfarena-worker-"))
        self._server = RefereeServer(TokenRegistry(), port=None,
                                     unix_socket=self._socket_dir / "arena.sock")
        await self._server.start()
        self.host = claim_host_reset()
        await self._pool.open()  # no connection yet (one per call)
        await self.app.open_async(pool=self._pool)
        return self._server

    def adopt(self, tournament_id: int, player: TournamentPlayer) -> None:
        """Play this tournament with a player already started (run-tournament's)."""
        player.neighbours = self._neighbours
        self.players[tournament_id] = player

    def _neighbours(self) -> list[TournamentPlayer]:
        return list(self.players.values())

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Stop taking jobs; the matches being played are finished and stored."""
        self._stop.set()
        if self._worker is not None:
            self._worker.stop()  # type: ignore[no-untyped-call]

    def shut_down(self, grace_s: float) -> None:
        """Stop taking jobs; the matches in play get `grace_s` seconds to finish and be
        stored, then are cut (`halt`)."""
        self.stop()
        asyncio.get_running_loop().call_later(grace_s, self.halt)

    def halt(self) -> None:
        """Stop now: the matches in play are cut (nothing of them is stored; their jobs
        go back to the queue at once: `MatchRetry`)."""
        self._halted = True
        self.stop()
        for task in list(self._jobs):
            task.cancel()

    async def run(self, until: Callable[[], bool] | None = None) -> WorkerStats:
        """Take jobs until stopped, or until `until()` says so (checked every poll). The
        queue is joined once; if joining fails (the database away), it is tried again
        with a short back-off (at most `_REJOIN_MAX_S`)."""
        watcher = asyncio.create_task(self._watch(until)) if until is not None else None
        rejoin = Backoff(_REJOIN_FIRST_S, _REJOIN_MAX_S)
        try:
            while not self._stop.is_set():
                try:
                    await self._run_once()
                    rejoin.reset()
                except Exception as exc:
                    if self._stop.is_set():
                        break
                    self.stats.restarts += 1
                    if not self.queue.failed(exc):  # an outage is said once, by the link
                        log.warning("cannot join the job queue (%s); trying again",
                                    one_line(exc.__cause__ or exc))
                    await rejoin.wait(self._stop)
        finally:
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
        return self.stats

    async def close(self) -> None:
        for tournament_id, player in list(self.players.items()):
            unsaved = await close_player(player, f" of tournament {tournament_id}")
            if unsaved is not None:
                self.stats.unsaved.append(unsaved)
        self.players.clear()
        if self._server is not None:
            await self._server.stop(grace=0.5)
            self._server = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
        if self.host is not None:
            self.host.release()
        await self.app.close_async()
        await self._pool.close()

    def _retry_stores(self) -> None:
        """The database answers again: the records waiting out the outage are tried now."""
        for player in self.players.values():
            if player.writer is not None:
                player.writer.retry_now()

    async def _run_once(self) -> None:
        """Join the queue and take jobs until stopped (an outage does not end it)."""
        options = self.options
        queues = None if self.only is None else [job_queue.queue_name(self.only)]
        self._worker = Worker(
            self.app, queues=queues, name="cfarena-worker",
            concurrency=options.concurrency, wait=True,
            fetch_job_polling_interval=options.poll_s,
            update_heartbeat_interval=options.heartbeat_s,
            # procrastinate prunes the rows of workers silent this long when one starts
            stalled_worker_timeout=queue_link.PRUNE_AFTER_S,
            listen_notify=False,  # jobs are looked for every poll_s; one connection less
            install_signal_handlers=False,
            additional_context={},
        )
        retrier = asyncio.create_task(self._retry_stalled())
        try:
            if self._stop.is_set():
                return
            await self._worker.run()  # type: ignore[no-untyped-call]
        finally:
            retrier.cancel()
            await asyncio.gather(retrier, return_exceptions=True)
            self._worker = None

    async def _retry_stalled(self) -> None:
        """Put back the jobs of workers silent for `stalled_s`: not this worker's own,
        and only once the queue has answered it for `stalled_s` since its last outage."""
        stalled_s = self.options.stalled_s
        while True:
            await asyncio.sleep(max(0.5, stalled_s / 4))
            worker = self._worker
            if worker is None or worker.worker_id is None or self.queue.in_touch_s < stalled_s:
                continue
            try:
                retried = await job_queue.retry_stalled(self.app, self.db, stalled_s,
                                                        own=worker.worker_id)
            except Exception as exc:
                if not self.queue.failed(exc):
                    log.warning("cannot put back the jobs of silent workers: %s",
                                one_line(exc.__cause__ or exc))
                continue
            if retried:
                log.warning("%d match job(s) of a silent worker put back in the queue",
                            retried)

    async def _watch(self, until: Callable[[], bool]) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(StorageError):
                if await asyncio.to_thread(until):
                    self.stop()
                    return
            await asyncio.sleep(self.options.poll_s)

    # ------------------------------------------------------------ one job
    async def _job(self, context: procrastinate.JobContext, tournament_id: int,
                   match_id: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._jobs.add(task)
        self.touched.add(tournament_id)
        try:
            await self._play_job(tournament_id, match_id)
        except asyncio.CancelledError:
            if not self._halted:
                raise
            # cut by `halt`: a plain failure, which the queue retries (another worker)
            raise MatchCut(f"match {match_id}: the worker was stopped mid-match") from None
        except LeaseLost:  # silent past the stall limit: the match is played elsewhere
            raise  # (its writer said so in one line) put back only if still held here
        except PhaseNotOpen:
            raise  # back in the queue for a moment: not a failure
        except Exception as exc:  # the queue retries it; say why here (its logs are quiet)
            if is_outage(exc):  # not a failure of the match: retried as often as it takes
                raise DatabaseAway(f"match {match_id}: {one_line(exc)}") from exc
            why = one_line(exc)
            if self.retry.last_try(context.job):
                await self._give_up(tournament_id, match_id, why)
            elif why not in self._said:  # the same cause once (a bot that does not start)
                self._said.add(why)
                log.warning("match %s failed on this worker (it is retried): %s", match_id, why)
            raise
        finally:
            self._jobs.discard(task)

    async def _give_up(self, tournament_id: int, match_id: str, why: str) -> None:
        """The job of `match_id` failed for good: its match is stored aborted with why."""
        self.gave_up[tournament_id] = why
        log.error("match %s failed for good: %s", match_id, why)
        with contextlib.suppress(StorageError):
            await asyncio.to_thread(self.db.abort_unplayed, match_id,
                                    AbortReason.JOB_FAILED.text(why))

    def unfinished(self) -> list[str]:
        """Once no job is waiting or running: the tournaments this worker took jobs of
        that are not finished (their jobs failed for good), marked interrupted, each as
        one line saying why and what to do."""
        said = []
        for tournament_id in sorted(self.touched):
            if self._finish_if_done(tournament_id):
                continue
            counts = self.db.match_counts(tournament_id)
            left = sum(counts.values()) - counts.get("finished", 0)
            if not left:
                continue
            self.db.set_tournament_status(tournament_id, TournamentStatus.INTERRUPTED)
            why = self.gave_up.get(tournament_id, "their jobs failed on other workers")
            said.append(f"tournament {tournament_id} is not finished: {left} match(es) could "
                        f"not be played ({why}); it is marked interrupted, the matches "
                        "aborted with the reason: fix the cause, then `cfarena run-tournament` "
                        "with its options queues them again")
        return said

    async def _play_job(self, tournament_id: int, match_id: str) -> None:
        test = await self._test_of(tournament_id)
        match = await asyncio.to_thread(self.db.pending_match, tournament_id, match_id)
        if match is None:  # stored already (by a worker that died before acknowledging)
            self.stats.skipped += 1
            if test is not None:  # (and perhaps before counting it)
                await advance_queued(self.app, self.db, test[1], test[0])
            return
        if test is not None and await asyncio.to_thread(self._decided, test[0]):
            await self._skip_decided(match.id)
            return
        player = await self._player(tournament_id)
        phase = player.phases.get(match.key)
        if phase is None:  # scheduled since the player started (a bot test's next batch)
            player.phases = await asyncio.to_thread(match_phases, self.db, tournament_id)
            phase = player.phases.get(match.key, 0)
            # its seats: what its phases can use started ahead
            player.schedule(await asyncio.to_thread(self.db.pending_matches, tournament_id))
        state = await asyncio.to_thread(self._phase_state, tournament_id, player, phase)
        if state != "open":
            self.stats.deferred += 1
            if state == "wait":  # back in the queue for a moment (`MatchRetry`)
                raise PhaseNotOpen(f"match {match.key}: an earlier phase is not finished")
            log.warning("match %s waits for a failed match of an earlier phase; run "
                        "the tournament again to retry them", match.key)
            return
        await player.enter_phase(phase)
        started = time.monotonic()
        stored_before = player.store_s
        try:
            record = await player.play(match)
        except LeaseLost:  # the test decided after the check above: not started
            if test is None or not await asyncio.to_thread(self._decided, test[0]):
                raise
            await self._skip_decided(match.id)
            return
        self.stats.match_s += time.monotonic() - started
        self.stats.store_s += player.store_s - stored_before
        self.stats.played += 1
        if self.sink is not None:
            self.sink.match_done(record, None)
        if test is not None:  # before the job is acknowledged: a worker that dies now
            await advance_queued(self.app, self.db, test[1], test[0])  # leaves it queued
        # the match is stored: an outage now does not fail its job (`unfinished` at the
        # end of --until-done, or the next match's worker, marks the tournament finished)
        with contextlib.suppress(StorageError):
            await asyncio.to_thread(self._finish_if_done, tournament_id)

    async def _test_of(self, tournament_id: int) -> tuple[int, SprtConfig] | None:
        """(test id, config) of the bot test whose matches these are; None for a
        tournament's."""
        if tournament_id not in self.tests:
            info = await asyncio.to_thread(self.db.sprt_test_of, tournament_id)
            self.tests[tournament_id] = None if info is None else (
                info.id, stored_sprt_config(info.config))
        return self.tests[tournament_id]

    async def _skip_decided(self, match_id: str) -> None:
        """A job of a decided test: its match is not played, and aborted with its lease
        revoked. This worker holds the match's job, so a lease on it is no live
        player's (a start of this worker's whose commit went through unacknowledged in
        an outage, or a worker taken for dead): left alone, the match would stay running
        for good and its tournament never finish."""
        self.stats.skipped += 1
        await asyncio.to_thread(self.db.abort_unplayed, match_id, DECIDED)

    def _decided(self, test_id: int) -> bool:
        info = self.db.get_sprt_test(test_id)
        return info is None or info.decided

    async def _player(self, tournament_id: int) -> TournamentPlayer:
        lock = self._starting.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            player = self.players.get(tournament_id)
            if player is not None:
                return player
            info = await asyncio.to_thread(self.db.get_tournament, tournament_id)
            if info is None:
                raise TournamentError(f"no tournament {tournament_id}")
            config, stored_launch = stored_config(info.config)
            problem = await asyncio.to_thread(local_files_problem, config)
            if problem is not None:
                raise TournamentError(f"tournament {tournament_id}: {problem}")
            log_dir = self.options.log_dir
            launch = Launch(sandbox=stored_launch.sandbox, limits=stored_launch.limits,
                            binds=self.options.binds,
                            hide=() if log_dir is None else (log_dir.resolve(),),
                            connect_timeout=self.options.connect_timeout)
            assert self._server is not None, "start() first"
            player = TournamentPlayer(self._server, self.db, config, launch,
                                      self.options.concurrency, self.options.log_dir,
                                      acknowledge=True, host=self.host,
                                      neighbours=self._neighbours)
            pending = await asyncio.to_thread(self.db.pending_matches, tournament_id)
            entrants = await asyncio.to_thread(self.db.tournament_bots, tournament_id)
            configured = {b.name for b in config.bots}
            names = {i: name for i, name in entrants.items() if name in configured}
            phase_of = await asyncio.to_thread(match_phases, self.db, tournament_id)
            await player.start([[names[i] for i in m.seat_bot_ids] for m in pending],
                               [phase_of.get(m.key, 0) for m in pending],
                               [m.key for m in pending])
            player.attach(tournament_id, names, phase_of)
            self.players[tournament_id] = player
            return player

    def _phase_state(self, tournament_id: int, player: TournamentPlayer, phase: int) -> str:
        """"open" when every match of the earlier phases is finished; "wait" while one
        is not; "stuck" when one of those has no job left (it failed: a rerun queues
        it again, and this match with it)."""
        earlier = {key for key, p in player.phases.items() if p < phase}
        if not earlier:
            return "open"
        # the jobs first: a job that is no longer waiting or running had its match
        # stored before (acknowledged after the store), so its match reads finished
        queued = set(job_queue.queued_matches(self.db.engine, tournament_id, ("todo", "doing")))
        unfinished = {m.key: m.id for m in self.db.pending_matches(tournament_id)
                      if m.key in earlier}
        if not unfinished:
            return "open"
        return "wait" if any(i in queued for i in unfinished.values()) else "stuck"

    def _finish_if_done(self, tournament_id: int) -> bool:
        """Mark the tournament finished once every match is (a bot test's: once it has
        decided and no match is in play); whether it is."""
        counts = self.db.match_counts(tournament_id)
        test = self.tests.get(tournament_id)
        if test is not None:
            done = self._decided(test[0]) and not counts.get("running", 0)
        else:
            done = bool(counts) and counts.get("finished", 0) == sum(counts.values())
        if done:
            self.db.set_tournament_status(tournament_id, TournamentStatus.FINISHED)
        return done


def quiet_queue_logs() -> None:
    """procrastinate and psycopg's pool log every failed attempt while the database is away
    (with tracebacks), and psycopg each connection it drops mid-statement (three lines);
    the worker says it in one line of its own instead."""
    logging.getLogger("procrastinate").setLevel(logging.CRITICAL)
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    logging.getLogger("psycopg").setLevel(logging.ERROR)


def queue_empty(db: Database, tournament_id: int | None) -> bool:
    """No match job waiting or running (of one tournament, or of any)."""
    return not job_queue.queued_matches(db.engine, tournament_id, ("todo", "doing"))
