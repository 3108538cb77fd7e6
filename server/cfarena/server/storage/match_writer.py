"""Storing finished matches off the event loop, in order, through database outages.

`to_stored` turns the referee's `MatchRecord` into the `StoredMatch` storage keeps
(with its game log); every match, of a tournament or of the arena, goes this way.

`cfarena serve` hands every match record to a `MatchWriter`: an asyncio queue
drained by one task that calls the synchronous `Database.record_match` in a
worker thread. While the database cannot be reached the writer retries the
record at the head of the queue with exponential back-off (`backoff.Backoff`: 0.5 s
doubling to 30 s), keeping the order; `record_match` is a no-op for a match already
finished, so a retried write never stores (or rates) a match twice. One line
says when storage starts failing, one when it is back. A record whose lease the
match no longer holds (`storage.LeaseLost`: this process was taken for dead and the
match was aborted or given to another) is dropped with one line: it is not retried,
nor kept as unsaved.

`MatchWriter.close` flushes for a bounded time; `dump_unsaved` writes what is
left as JSON lines, so that nothing finished is lost silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.exc import InterfaceError, OperationalError

from cfarena.match.log_format import LOG_FORMAT, record_to_log
from cfarena.match.record import MatchRecord
from cfarena.server.backoff import Backoff, Outage
from cfarena.server.storage import Database, LeaseLost, StorageError, StoredMatch

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0
# while closing, the database gets retried this often (the flush has a deadline)
CLOSING_DELAY_S = 0.5

_T = TypeVar("_T")


def to_stored(record: MatchRecord, lease: str | None = None) -> StoredMatch:
    """The storage form of a referee match record (with its game log), to be stored
    under `lease` (`Database.mark_running`'s; None: a match played without one)."""
    return StoredMatch(
        match_id=record.match_id,
        status=record.status,
        reason=record.reason or None,
        round_scores=record.round_scores,
        totals=record.totals,
        ranks=record.ranks,
        forfeited=record.forfeited,
        faults=list(record.faults),
        log=record_to_log(record),
        log_format=LOG_FORMAT,
        duration_s=max(0.0, record.finished_at - record.started_at)
        if record.started_at
        else None,
        # when it ended, not when it was written (writes may wait for the database)
        finished_at=datetime.fromtimestamp(record.finished_at, UTC)
        if record.finished_at
        else None,
        lease=lease,
    )


def is_outage(exc: BaseException) -> bool:
    """A database that cannot be reached (down, restarting, the network, locked), as
    opposed to a write it refuses (a bug, a constraint): only outages are retried."""
    return isinstance(exc, StorageError) and isinstance(
        exc.__cause__, OperationalError | InterfaceError)


class StoreOutcome(enum.Enum):
    """What became of a record (`MatchWriter.settled`)."""

    STORED = "stored"  # stored, or found stored already
    REFUSED = "refused"  # the database refused it (kept for the unsaved-records file)
    LEASE_LOST = "lease lost"  # played under a lease the match no longer holds: dropped


class MatchWriter:
    """Stores `StoredMatch`s in submission order, in a worker thread, retrying outages.

    `say` prints one line for the organiser. `call` runs any other storage call the
    same way (in a thread, outages reported in the same two lines), without queueing.
    """

    def __init__(self, db: Database, say: Callable[[str], None], *,
                 first_delay: float = FIRST_DELAY_S, max_delay: float = MAX_DELAY_S,
                 acknowledge: bool = False) -> None:
        self.db = db
        self.acknowledge = acknowledge  # keep each record's outcome for `settled`
        self.say = say
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.written = 0
        self.lost = 0  # records dropped: their lease was lost (`LeaseLost`)
        self.failed: list[tuple[StoredMatch, str]] = []  # refused records, with why
        self._queue: asyncio.Queue[StoredMatch] = asyncio.Queue()
        self._current: StoredMatch | None = None
        self._task: asyncio.Task[None] | None = None
        self._nudge = asyncio.Event()
        self._closing = False
        self._outage = Outage()
        self._settled: dict[str, asyncio.Future[StoreOutcome]] = {}
        # told of every record once it is stored (on the loop; must return at once)
        self.on_written: list[Callable[[StoredMatch], None]] = []

    # ----------------------------------------------------------- the state
    @property
    def waiting(self) -> int:
        """Records submitted and not written yet."""
        return self._queue.qsize() + (self._current is not None)

    @property
    def outage(self) -> bool:
        """Whether the last storage call failed because the database was away."""
        return self._outage.away

    def _failing(self, exc: BaseException) -> None:
        if self._outage.begin():
            self.say(f"storage unavailable ({exc}); retrying, {self.waiting} "
                     f"match{'' if self.waiting == 1 else 'es'} waiting")

    def _working(self, started: float, just_written: int = 0) -> None:
        """A call begun at `started` (`time.monotonic()`) worked: the end of an outage,
        said once, if it began after the outage did (`Outage.end`)."""
        away = self._outage.end(started)
        if away is not None:
            left = self.waiting - just_written
            self.say(f"storage available again after {away:.0f} s; writing "
                     f"{left} waiting match{'' if left == 1 else 'es'}")
            self._nudge.set()  # the writer may be sleeping in its back-off

    # ------------------------------------------------------------- the API
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())

    def retry_now(self) -> None:
        """Try a record waiting out an outage now, not at the end of its back-off (the
        caller saw the database answer again)."""
        self._nudge.set()

    def submit(self, record: StoredMatch) -> None:
        """Queue a finished (or aborted) match; it is stored after every earlier one."""
        self._queue.put_nowait(record)

    async def settled(self, match_id: str) -> StoreOutcome:
        """Wait until the record of `match_id` submitted last is stored, refused or
        dropped for its lost lease; a queue worker acknowledges its job only then.
        Cancelled by `close`. Only for a writer made with `acknowledge=True`."""
        assert self.acknowledge, "settled() needs MatchWriter(acknowledge=True)"
        future = self._settled.get(match_id)
        if future is None:
            future = self._settled[match_id] = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.shield(future)
        finally:
            if future.done():
                self._settled.pop(match_id, None)

    def _settle(self, match_id: str, outcome: StoreOutcome) -> None:
        if not self.acknowledge:
            return
        future = self._settled.get(match_id)
        if future is None:
            future = self._settled[match_id] = asyncio.get_running_loop().create_future()
        if not future.done():
            future.set_result(outcome)

    async def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(*args)` in a worker thread; an outage is reported (and re-raised)."""
        return await self._call(fn, args, 0)

    async def _call(self, fn: Callable[..., _T], args: tuple[Any, ...], writes: int) -> _T:
        started = time.monotonic()
        try:
            result = await asyncio.to_thread(fn, *args)
        except StorageError as exc:
            if is_outage(exc):
                self._failing(exc)
            raise
        self._working(started, writes)
        return result

    async def close(self, timeout: float) -> list[StoredMatch]:
        """Try for up to `timeout` s to write what is queued; the records left unwritten
        (those the database refused first, then the queue in order)."""
        self._closing = True
        self._nudge.set()
        task = self._task
        if task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._task = None
        for future in self._settled.values():
            future.cancel()
        self._settled.clear()
        left = [record for record, _ in self.failed]
        if self._current is not None:
            left.append(self._current)
            self._current = None
        while not self._queue.empty():
            left.append(self._queue.get_nowait())
            self._queue.task_done()
        return left

    # ---------------------------------------------------------- the writer
    async def _drain(self) -> None:
        while True:
            record = await self._queue.get()
            # cancelled while writing (close's deadline): it stays current, so unsaved
            self._current = record
            await self._write(record)
            self._current = None
            self._queue.task_done()

    def backoff(self) -> Backoff:
        """The writer's delays between tries while the database is away (for other
        loops that wait for it the same way)."""
        return Backoff(self.first_delay, self.max_delay)

    async def _write(self, record: StoredMatch) -> None:
        backoff = self.backoff()
        while True:
            self._nudge.clear()  # set from now on: the database is back, or closing
            try:
                await self._call(self.db.record_match, (record,), 1)
            except LeaseLost as exc:  # another copy is the match's: this one is void
                self.lost += 1
                self.say(str(exc))
                self._settle(record.match_id, StoreOutcome.LEASE_LOST)
                return
            except Exception as exc:  # any failure is reported, none stops serve
                if not is_outage(exc):
                    why = f"{type(exc).__name__}: {exc}"
                    self.say(f"error: cannot store match {record.match_id}: {why}; "
                             "kept for the unsaved-records file")
                    self.failed.append((record, why))
                    self._settle(record.match_id, StoreOutcome.REFUSED)
                    return
                await backoff.wait(self._nudge,
                                   at_most=CLOSING_DELAY_S if self._closing else None)
                continue
            self.written += 1
            self._settle(record.match_id, StoreOutcome.STORED)
            for hook in self.on_written:
                hook(record)
            return


# ------------------------------------------------------------- unsaved records


def record_json(record: StoredMatch) -> dict[str, Any]:
    """A `StoredMatch` as plain JSON values (enums by value, times in ISO 8601)."""
    plain: dict[str, Any] = _plain(dataclasses.asdict(record))
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def dump_unsaved(records: Sequence[StoredMatch], directory: Path) -> Path:
    """Write `records` to `directory/cfarena-unsaved-<UTC timestamp>.jsonl`, one JSON
    object (the fields of `storage.StoredMatch`) per line; returns the path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = directory / f"cfarena-unsaved-{stamp}.jsonl"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"cfarena-unsaved-{stamp}-{n}.jsonl"
    with path.open("x", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record_json(record), ensure_ascii=False, sort_keys=True) + "\n")
    return path
