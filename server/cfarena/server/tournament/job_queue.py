"""Matches as jobs on a PostgreSQL-backed queue (procrastinate), beside cfarena's tables.

A tournament on PostgreSQL is a set of `cfarena.play_match` jobs, one per match, on the
queue `tournament-<id>`. procrastinate does the claiming (`FOR UPDATE SKIP LOCKED`), the
workers' heartbeats and the retries; cfarena adds:

- a queue lock per deal, `T<id>-g<game>`: procrastinate never runs two jobs with one
  lock at once, so the rotations of a deal never play at the same time, on any worker
  (two live processes of one bot could signal each other the hands they hold). The
  lock names the game, not its seed: seeds of unplayed deals are shown nowhere;
- phases (`schedule.phases`): a job's priority is minus its match's phase, so the
  earlier phases' jobs are taken first, and a worker puts a job back for a moment
  while an earlier phase is not finished (`worker.MatchRetry`);
- `retry_stalled`: the jobs of workers whose heartbeat stopped (kill -9, machine gone,
  or only frozen) go back to the queue, to be played again from their seed by another
  worker; their matches' leases are revoked first, so that a worker that was only
  frozen stores nothing of them when it wakes (`storage.LeaseLost`);
- a job is acknowledged (finished or put back) only by the worker that holds it:
  `queue_link.SteadyJobManager` leaves alone a job that was put back in the queue, or
  taken by another worker, meanwhile;
- `cancel_queued`: a bot test that decided leaves none of its jobs waiting;
- exactly once is the database's, not the queue's: a job whose match is finished does
  nothing, and `record_match` never stores a finished match again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from cfarena.server.storage import Database, ScheduledMatch, StorageError
from cfarena.server.storage.connect import one_line

if TYPE_CHECKING:  # procrastinate is imported where the queue is used (~0.2 s at startup)
    import procrastinate

TASK = "cfarena.play_match"
QUEUE_PREFIX = "tournament-"
_SCHEMA_LOCK = 0x6366_0002  # advisory lock key: one process installs the queue's schema


def queue_name(tournament_id: int) -> str:
    return f"{QUEUE_PREFIX}{tournament_id}"


def deal_lock(tournament_id: int, key: str) -> str:
    """The queue lock of a match's deal: its game ("t0-g3-r1" -> "T7-g3")."""
    game = next((part for part in key.split("-") if part.startswith("g")), key)
    return f"T{tournament_id}-{game}"


def uses_queue(engine: Engine) -> bool:
    """Whether tournaments in this database are played through the job queue."""
    return engine.dialect.name == "postgresql"


def conninfo(engine: Engine) -> str:
    """The libpq connection string of the database (procrastinate's own connections)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def new_app(engine: Engine) -> procrastinate.App:
    """A procrastinate app on this database (open it with `async with app.open_async()`)."""
    import procrastinate

    # a short wait for a pooled connection: a worker whose database is away finds out in
    # seconds (and rejoins when it is back) instead of hanging on the pool
    return procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=conninfo(engine), kwargs={"connect_timeout": 5}, timeout=5.0, min_size=1))


def install_schema(engine: Engine) -> None:
    """procrastinate's tables and functions, once (idempotent; concurrent callers wait)."""
    import psycopg  # only where the queue is used: a SQLite run never loads it (~60 ms)
    from procrastinate.schema import SchemaManager

    try:
        with engine.begin() as conn:
            conn.execute(text("select pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
            present = conn.execute(text("select to_regclass('procrastinate_jobs')")).scalar()
            if present is None:
                raw = conn.connection.driver_connection
                assert raw is not None
                raw.execute(SchemaManager.get_schema())  # no parameters: its % stay as they are
    except (SQLAlchemyError, psycopg.Error) as exc:
        raise StorageError(f"cannot install the job queue's schema: {one_line(exc)}") from exc


async def enqueue(app: procrastinate.App, engine: Engine, tournament_id: int,
                  pending: Sequence[ScheduledMatch], phase_of: Mapping[str, int]) -> int:
    """A job for each pending match that has none waiting or running; how many were
    added (resume: a match whose job is still queued is not queued twice)."""
    queued = set(queued_matches(engine, tournament_id, ("todo", "doing")))
    added = 0
    for match in pending:
        if match.id in queued:
            continue
        if await defer_match(app, tournament_id, match, phase_of.get(match.key, 0)):
            added += 1
    return added


async def defer_match(app: procrastinate.App, tournament_id: int, match: ScheduledMatch,
                      phase: int) -> bool:
    """Queue the job of `match`; False if it has one waiting already."""
    from procrastinate import exceptions as queue_errors

    try:
        await app.configure_task(
            TASK, queue=queue_name(tournament_id), lock=deal_lock(tournament_id, match.key),
            queueing_lock=match.id, priority=-phase,
        ).defer_async(tournament_id=tournament_id, match_id=match.id)
    except queue_errors.AlreadyEnqueued:
        return False
    return True


async def cancel_queued(app: procrastinate.App, tournament_id: int) -> int:
    """Cancel the tournament's jobs still waiting (a decided bot test's: never played);
    how many. A job being played is left to end."""
    cancelled = 0
    for job in await app.job_manager.list_jobs_async(queue=queue_name(tournament_id),
                                                    task=TASK, status="todo"):
        assert job.id is not None
        cancelled += await app.job_manager.cancel_job_by_id_async(job.id)
    return cancelled


def queued_matches(engine: Engine, tournament_id: int | None,
                   statuses: Iterable[str]) -> list[str]:
    """Match ids of the jobs in these states (of one tournament, or of all)."""
    query = ("select args->>'match_id' from procrastinate_jobs where task_name = :task "
             "and status::text = any(:statuses)")
    params: dict[str, object] = {"task": TASK, "statuses": list(statuses)}
    if tournament_id is not None:
        query += " and queue_name = :queue"
        params["queue"] = queue_name(tournament_id)
    try:
        with engine.connect() as conn:
            return [str(row[0]) for row in conn.execute(text(query), params)]
    except SQLAlchemyError as exc:
        raise StorageError(f"cannot read the job queue: {one_line(exc)}") from exc


async def retry_stalled(app: procrastinate.App, db: Database, seconds_since_heartbeat: float,
                        *, own: int | None = None) -> int:
    """Put the match jobs of workers without a heartbeat for that long back in the queue,
    each after revoking its match's lease (a worker that was only frozen stores nothing
    of it when it wakes), except those of worker `own` (the caller: its jobs are live,
    whatever its heartbeat)."""
    stalled = await app.job_manager.get_stalled_jobs(
        task_name=TASK, seconds_since_heartbeat=seconds_since_heartbeat)
    retried = 0
    for job in stalled:
        if own is not None and job.worker_id == own:
            continue
        assert job.id is not None
        match_id = job.task_kwargs.get("match_id")
        if isinstance(match_id, str):
            await asyncio.to_thread(db.revoke_lease, match_id)
        # straight to the database: a refusal (the job moved on meanwhile) is the caller's
        await app.job_manager.retry_job_by_id_async(job_id=job.id, retry_at=datetime.now(UTC))
        retried += 1
    return retried
