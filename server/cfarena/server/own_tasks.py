"""Waiting for a task of our own without swallowing our own cancellation.

`contextlib.suppress(asyncio.CancelledError)` around `await helper_task` hides two
different things: the helper having been cancelled (what was meant) and the waiting
task itself being cancelled, which then runs on as if nothing happened. The second
is how Ctrl-C reaches a run (`asyncio.run` cancels the main task on SIGINT), so a
Ctrl-C that landed in such a wait was lost and the run finished with status 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


async def settle(awaitable: Awaitable[object], timeout: float | None = None,
                 *, failures: bool = True) -> None:
    """Wait for `awaitable` (at most `timeout` seconds) and ignore how it ended: its
    cancellation, a timeout, and (with `failures`) any exception it raised. A
    cancellation of the task that waits, requested while it waits here, is not
    ignored: it propagates."""
    task = asyncio.current_task()
    # cancellations of this task already requested (cleanup after one runs with them):
    # only a new one is ours to pass on
    before = task.cancelling() if task is not None else 0
    try:
        if timeout is None:
            await awaitable
        else:
            await asyncio.wait_for(awaitable, timeout)
    except asyncio.CancelledError:
        if task is not None and task.cancelling() > before:
            raise
    except TimeoutError:
        pass
    except Exception:
        if not failures:
            raise
