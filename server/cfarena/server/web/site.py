"""Everything the web app serves from: the database reads, the live hub, the pool,
the admin token, the entrants' session key, and (once it runs) the arena, for the
admin actions."""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from cfarena.server.storage import Database
from cfarena.server.web.data import WebData
from cfarena.server.web.entrant_session import EntrantSessions
from cfarena.server.web.hub import LiveHub

_T = TypeVar("_T")

READ_THREADS = 4  # the web's database reads at once; more wait their turn here


class Ladder(Protocol):
    """What the admin actions and the leaderboard's presence need of the arena
    (`cfarena.server.arena.Arena`)."""

    paused: bool

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    @property
    def players(self) -> int: ...

    def connected_bots(self) -> frozenset[str]: ...


@dataclass
class WebSite:
    db: Database
    pool: str  # the arena's pool: the leaderboard's default
    hub: LiveHub
    admin_token: str | None = None  # None: admin actions answer 403
    ladder: Ladder | None = None  # the arena, once it runs
    # signs the entrants' session cookies: random per process, so a restart ends them
    session_key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def __post_init__(self) -> None:
        self.data = WebData(self.db)
        self.sessions = EntrantSessions(self.session_key)
        # the web's own threads, not the loop's default executor: the arena's poll (its
        # heartbeat), token checks, scheduling and storing run there (`asyncio.to_thread`),
        # and a flood of page requests must not queue in front of them
        self._threads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="cfarena-web")

    def presence(self, pool: str) -> tuple[frozenset[str] | None, int | None]:
        """(the bots dialled in now, the seats of a table) for the leaderboard of
        `pool`: known for the arena's own pool once it runs, else (None, None). On the
        event loop (the referee's connections are the loop's)."""
        if self.ladder is None or pool != self.pool:
            return None, None
        return self.ladder.connected_bots(), self.ladder.players

    async def read(self, fn: Callable[..., _T], *args: object) -> _T:
        """`fn(*args)` in one of the web's worker threads (database reads never run on
        the loop, nor in the threads the arena's own database work needs)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, functools.partial(fn, *args))

    def close(self) -> None:
        """Let the web's threads end (what they run finishes)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
