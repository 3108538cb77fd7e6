"""A queue worker's link to the job queue, made to outlast database outages.

procrastinate's `Worker` stops as soon as one of its database calls fails, and its
acknowledgement of a finished job, if it fails, ends that job's task with an exception
nobody retrieves. A cfarena worker plays on while the database is away (its matches'
records wait in its `MatchWriter`), so its `JobManager` is this one:

- taking a job: an outage is "no job now" (the worker looks again at its next poll);
- the heartbeat: a failure is skipped (the next beat renews it); the beat re-creates
  the worker's row if it was pruned meanwhile, under the same id;
- acknowledging a job (`finish_job`, `retry_job`): tried again every `retry_s` (a steady
  `backoff.Backoff`) until the database is back, or until `give_up()` (the worker was
  halted), and only while the job is still this worker's (running, taken by it): one
  put back in the queue while this worker was silent, maybe taken by another since, is
  left to whoever has it now, with one line;
- leaving the queue: an outage leaves the row behind (pruned later).

One line says when the queue becomes unavailable, one when it is back: when a call
begun after it went has worked (one begun before may get through a shutdown), and
`on_back` is told then. `in_touch_s` is how long the queue has answered since the last outage:
a worker puts other workers' jobs back only after being in touch for the stall limit
itself (after an outage every heartbeat is old; each worker gets that long to beat).
Connections come from a null pool (one per call): nothing is left to reconnect after
an outage, and a call while the database is away fails at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import psycopg
from procrastinate import exceptions, jobs
from procrastinate.manager import JobManager
from psycopg_pool import AsyncNullConnectionPool

from cfarena.server.backoff import Backoff, Outage
from cfarena.server.storage.connect import one_line

# a worker's row is removed when it has not beaten for this long (procrastinate's prune at
# a worker's start); far longer than any stall limit, so that a live worker cut off by an
# outage keeps its row, and its jobs stay its own
PRUNE_AFTER_S = 3600.0

_BEAT = ("INSERT INTO procrastinate_workers (id, last_heartbeat) OVERRIDING SYSTEM VALUE "
         "VALUES (%(worker_id)s, now()) ON CONFLICT (id) DO UPDATE SET last_heartbeat = now()")


# a job's row is locked, and still this worker's, before its state changes: a job put
# back in the queue (`retry_stalled`) or taken by another worker meanwhile is left alone
# (procrastinate's own calls check only that the job is running, not whose it is)
_HELD = ("with held as (select id from procrastinate_jobs where id = %(job_id)s "
         "and status = 'doing' and worker_id is not distinct from %(worker_id)s for update) ")
_FINISH_HELD = _HELD + ("select procrastinate_finish_job_v1(id, %(status)s, %(delete_job)s) "
                        "from held")
_RETRY_HELD = _HELD + ("select procrastinate_retry_job_v2(id, %(retry_at)s, %(new_priority)s, "
                       "%(new_queue_name)s, %(new_lock)s) from held")


def null_pool(conninfo: str) -> AsyncNullConnectionPool:
    """A pool that opens a connection per call (open it with `await pool.open()`)."""
    return AsyncNullConnectionPool(conninfo, kwargs={"connect_timeout": 5}, timeout=5.0,
                                   open=False)


def is_outage(exc: BaseException) -> bool:
    """A queue call failed because the database cannot be reached (not a refusal)."""
    cause = exc.__cause__ if isinstance(exc, exceptions.ConnectorException) else exc
    return isinstance(cause, psycopg.OperationalError | psycopg.InterfaceError)


class SteadyJobManager(JobManager):
    """The job manager of a cfarena worker: see the module docstring."""

    def __init__(self, connector: Any, *, say: Callable[[str], None], retry_s: float,
                 give_up: Callable[[], bool]) -> None:
        super().__init__(connector)
        self.say = say
        self.retry_s = retry_s
        self.give_up = give_up
        self.on_back: list[Callable[[], None]] = []
        self._outage = Outage()
        self._in_touch_since = time.monotonic()

    # ------------------------------------------------------------ the state
    @property
    def away(self) -> bool:
        return self._outage.away

    @property
    def in_touch_s(self) -> float:
        """Seconds since the queue answered again after the last outage (0 while away)."""
        return 0.0 if self.away else time.monotonic() - self._in_touch_since

    def failed(self, exc: BaseException) -> bool:
        """Note a failed call; True if it was an outage (said once, when it starts)."""
        if not is_outage(exc):
            return False
        if self._outage.begin():
            cause = exc.__cause__ or exc
            self.say(f"job queue unavailable ({one_line(cause)}); the matches in play go "
                     "on, and their jobs are acknowledged once it is back")
        return True

    def answered(self, started: float) -> None:
        """Note a call begun at `started` (`time.monotonic()`) that worked: the end of an
        outage, said once, if the call began after the outage did."""
        away = self._outage.end(started)
        if away is None:
            return
        self._in_touch_since = time.monotonic()
        self.say(f"job queue available again after {away:.0f} s")
        for hook in self.on_back:
            hook()

    # ------------------------------------------------------- the worker's calls
    async def fetch_job(self, queues: Iterable[str] | None, worker_id: int
                        ) -> jobs.Job | None:
        started = time.monotonic()
        try:
            job = await super().fetch_job(queues, worker_id)
        except exceptions.ConnectorException as exc:
            if not self.failed(exc):
                raise
            return None
        self.answered(started)
        return job

    async def update_heartbeat(self, worker_id: int) -> None:
        started = time.monotonic()
        try:
            await self.connector.execute_query_async(_BEAT, worker_id=worker_id)
        except exceptions.ConnectorException as exc:
            # never raised: procrastinate stops watching its heartbeat task early (when
            # its periodic deferrer, with nothing to do, ends), so a beat that raised
            # would end the beats for good, unsaid
            if not self.failed(exc):
                self.say(f"heartbeat refused: {one_line(exc.__cause__ or exc)}")
            return
        self.answered(started)

    async def unregister_worker(self, worker_id: int) -> None:
        try:
            await super().unregister_worker(worker_id)
        except exceptions.ConnectorException as exc:
            if not self.failed(exc):
                raise

    async def finish_job(self, job: jobs.Job, status: jobs.Status, delete_job: bool) -> None:
        await self._acknowledge(job, lambda: self.connector.execute_query_all_async(
            query=_FINISH_HELD, job_id=job.id, worker_id=job.worker_id, status=status.value,
            delete_job=delete_job))

    async def retry_job(self, job: jobs.Job, retry_at: Any = None, priority: int | None = None,
                        queue: str | None = None, lock: str | None = None) -> None:
        await self._acknowledge(job, lambda: self.connector.execute_query_all_async(
            query=_RETRY_HELD, job_id=job.id, worker_id=job.worker_id,
            retry_at=retry_at or datetime.now(UTC), new_priority=priority,
            new_queue_name=queue, new_lock=lock))

    async def _acknowledge(self, job: jobs.Job, call: Callable[[], Any]) -> None:
        steady = Backoff(self.retry_s, self.retry_s)
        while True:
            started = time.monotonic()
            try:
                held = await call()
            except exceptions.ConnectorException as exc:
                if not self.failed(exc):
                    self._not_held(job, one_line(exc.__cause__ or exc))
                    return
                if self.give_up():
                    return  # stopped: the job is put back by heartbeat, its match stored
                await steady.wait()
                continue
            self.answered(started)
            if not held:
                self._not_held(job, "left alone")
            return

    def _not_held(self, job: jobs.Job, why: str) -> None:
        self.say(f"the job of match {job.task_kwargs.get('match_id')} is no longer this "
                 "worker's (it was put back in the queue while this worker was silent, "
                 f"and maybe taken by another): {why}")
