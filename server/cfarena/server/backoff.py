"""The wait between tries while storage or the job queue is away: one back-off for the
loops that retry (`MatchWriter` storing a record, a tournament's match being marked
running, a queue worker joining its queue or acknowledging a job, the arena scheduling
a table).

A `Backoff` is a delay sequence (`first`, doubling up to `most`; `first == most` for a
steady one) and the wait itself: `await backoff.wait(wake)` sleeps the next delay, or
less if `wake` (an `asyncio.Event`: the database was seen back, the loop stops) is set
first; `reset()` after a call that worked starts again from `first`. There is no jitter:
each loop is one process's own, and the processes that share a database (arenas,
workers) do not fail in step.

An `Outage` is when a service went away: the writer (storage) and the queue worker's
link (the job queue) each say one line when it goes (`begin` is True once) and one when
a call begun after it went worked (`end` gives how long it was away). Giving up and the
words of those lines stay with each loop: the writer keeps a refused record for the
unsaved-records file, the worker says why it cannot join its queue, and so on.

Why not `tenacity` or `backoff`: both retry one call, wrapped by a decorator or an
iterator of attempts. Two of these loops do not retry one call: the arena gives a
table it could not schedule back and picks a new one, and the worker joins its queue
again after a run that ended; and the writer's wait ends early when the database is
seen back. The delays and the wait are what the loops share, and they are these few
lines, without a dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays from `first`, doubling up to `most` (seconds), and the wait between tries."""

    first: float
    most: float
    _next: float = field(init=False)

    def __post_init__(self) -> None:
        self._next = self.first

    def reset(self) -> None:
        """A call worked: the next failure waits `first` again."""
        self._next = self.first

    async def wait(self, wake: asyncio.Event | None = None, *,
                   at_most: float | None = None) -> None:
        """Sleep the next delay (no longer than `at_most`), or until `wake` is set; the
        delay after it is twice as long (up to `most`)."""
        delay = self._next if at_most is None else min(self._next, at_most)
        self._next = min(self._next * 2, self.most)
        if wake is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), delay)


class Outage:
    """Whether a service is away, and since when (`time.monotonic()`)."""

    def __init__(self) -> None:
        self.since: float | None = None

    @property
    def away(self) -> bool:
        return self.since is not None

    def begin(self) -> bool:
        """A call failed because the service is away: True if that starts an outage
        (say so once), False if it was away already."""
        if self.since is not None:
            return False
        self.since = time.monotonic()
        return True

    def end(self, started: float) -> float | None:
        """A call begun at `started` (`time.monotonic()`) worked: the seconds the service
        was away if that ends an outage (say so once), else None. A call begun before
        the outage began proves nothing: it may have got through just before the service
        went (a database shutting down ends its sessions one by one), so it ends none."""
        if self.since is None or started < self.since:
            return None
        away, self.since = time.monotonic() - self.since, None
        return away
