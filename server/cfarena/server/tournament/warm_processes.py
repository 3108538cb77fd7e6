"""The bookkeeping of a pool's processes: those alive and those in a match, what each
bot still needs started, the deals each bot plays now (which its processes alive then
have heard of), and the pool's background tasks.

A process is a `WarmBot` from its start to its stop, whether spawned afresh
(`spawned_supply.py`) or forked (`forked_supply.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from cfarena.server.referee import FaultKind, RefereeServer
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.tokens import SeatPass
from cfarena.server.sandbox import BotProcess, LimitWatch
from cfarena.server.sandbox.failure_lines import without_hint
from cfarena.server.tournament.forks import ForkedProcess, ForkServer

log = logging.getLogger("cfarena.tournament")


@dataclass(eq=False)
class WarmBot:
    """A started process of one bot, with its one-time pass and (once made) its connection."""

    bot: str
    process: BotProcess | ForkedProcess
    seat_pass: SeatPass
    connection: BotConnection | None = None
    server: ForkServer | None = None  # the fork server of a forked process
    failure: str | None = None  # why it never became ready
    written_off: str | None = None  # the bot cannot be started: why (its seat forfeits)
    # deals its bot played while this process was alive: it never plays one of them
    # (it could have listened to the other process through anything they share)
    tainted: set[int] = field(default_factory=set)
    started_at: float = field(default_factory=time.perf_counter)  # the referee's lag clock


class _NoStream:
    """The stream of a seat whose bot could not be started: nothing is ever written."""

    async def write(self, message: object) -> None:
        raise ConnectionError("not connected")


def written_off_seat(name: str, reason: str, output: str = "") -> WarmBot:
    """The seat of a bot given up (for `reason`; its last process printed `output`, which
    is the seat's log): never connected, its match records a disconnect fault quoting
    why, without the arena's hint (the fault's detail goes to every seat's MatchEnd
    and the public pages; the hint, naming the organiser's paths, stays in
    `written_off`: the terminal and the seat's log)."""
    seat_pass = SeatPass(name, "")
    connection = BotConnection(name, 1, _NoStream(), closed=True,
                               close_reason=(FaultKind.DISCONNECT,
                                             f"not connected: {without_hint(reason)}"))
    process = BotProcess(f"{name}#-", [], {}, sandbox=False)
    process.output.add(output.encode())
    return WarmBot(name, process, seat_pass, connection, written_off=reason)


class PhaseSeats:
    """The seats each bot holds in the matches of each phase not yet handed a process
    (`by_phase`: phase -> bot -> seats, from the schedule; None: not known), which bound
    how many processes (or fork servers) of a bot are worth having started ahead of
    need: at most its seats left in the current phase, and at most `cap` (its seats in
    one match times the matches played at once). A process or server started beyond
    that would never play in this phase, and a phase change stops it once a bot process
    of the phase has run (`BotPool.new_phase`). Matches scheduled after the pool
    started (a bot test's later batch) add their seats (`schedule`); a phase the
    schedule does not list is bounded by `cap` alone."""

    def __init__(self, by_phase: Mapping[int, Mapping[str, int]] | None,
                 cap: Mapping[str, int]) -> None:
        self.left = {p: dict(seats) for p, seats in (by_phase or {}).items()}
        self.cap = cap
        self.phase = min(self.left, default=0)  # the phase played now (first: the earliest)

    def wanted(self, name: str) -> int:
        """The processes of `name` worth having alive for the rest of the current phase."""
        cap = max(1, self.cap.get(name, 1))
        seats = self.left.get(self.phase)
        return cap if seats is None else min(cap, seats.get(name, 0))

    def took(self, name: str) -> None:
        """A seat of `name` in the current phase is handed a process."""
        seats = self.left.get(self.phase)
        if seats is not None:
            seats[name] = max(0, seats.get(name, 0) - 1)

    def schedule(self, by_phase: Mapping[int, Mapping[str, int]]) -> None:
        """Matches were scheduled since the pool started: each bot holds these seats more
        in each phase (`by_phase`: phase -> bot -> seats)."""
        for phase, seats in by_phase.items():
            left = self.left.setdefault(phase, {})
            for name, count in seats.items():
                left[name] = left.get(name, 0) + count

    def add(self, name: str) -> None:
        """`name` has one seat more to play in the current phase (a match played again)."""
        seats = self.left.get(self.phase)
        if seats is not None:
            seats[name] = seats.get(name, 0) + 1


class WarmProcesses:
    """A pool's processes (see the module docstring); they connect to `server` within
    `connect_timeout` seconds, and `watch` keeps their limits. `demand`: how many
    processes each bot will need in all (no spare is started beyond it)."""

    def __init__(self, server: RefereeServer, watch: LimitWatch, connect_timeout: float,
                 demand: Mapping[str, int]) -> None:
        self.server = server
        self.watch = watch
        self.connect_timeout = connect_timeout
        self.live: set[WarmBot] = set()
        self.taken: set[WarmBot] = set()  # handed out for a match by `take`, not released
        self.unstarted = dict(demand)  # processes each bot will still need
        self.started = 0  # processes and fork servers started, which numbers their labels
        self._playing: dict[str, dict[int, int]] = {}  # bot -> deal -> matches running
        self.tasks: set[asyncio.Task[Any]] = set()
        self.connecting: set[asyncio.Task[Any]] = set()  # of the processes not yet ready

    def number(self) -> int:
        """The number of the next process or fork server started (its label's)."""
        self.started += 1
        return self.started

    def issue(self, name: str) -> tuple[str, SeatPass]:
        """A one-time pass for a process of `name`: its token and the referee's pass."""
        return self.server.passes.issue(name)

    def need(self, name: str, count: int = 1) -> None:
        """`name` needs `count` processes more (a match more, a batch scheduled, or a
        process that failed)."""
        self.unstarted[name] = self.unstarted.get(name, 0) + count

    def starting(self, name: str) -> None:
        """A process of `name` is being started: one fewer to start."""
        self.unstarted[name] = self.unstarted.get(name, 1) - 1

    def add(self, warm: WarmBot) -> None:
        """`warm`'s process is started: alive until `stop`; a breach of its limits
        closes its connection."""
        warm.process.on_breach = lambda _proc, reason: self._on_breach(warm, reason)
        self.live.add(warm)

    def in_background(self, work: Coroutine[Any, Any, object], connecting: bool = False) -> None:
        """Run `work` as a task of the pool (cancelled by its close; `connecting`: of a
        process not yet ready, cancelled by a phase change too)."""
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        if connecting:
            self.connecting.add(task)
            task.add_done_callback(self.connecting.discard)

    def begin(self, name: str, deal: int) -> None:
        """`name` starts playing `deal`: no process of it alive now may ever play it."""
        self._playing.setdefault(name, {})[deal] = self._playing.get(name, {}).get(deal, 0) + 1
        for warm in self.live:
            if warm.bot == name:
                warm.tainted.add(deal)
                if warm.server is not None:
                    # its child could leave what it heard in its sandbox (the PID
                    # counter, the fork server's CPU counters: see forks.py)
                    warm.server.tainted.add(deal)

    def end(self, name: str, deal: int) -> None:
        """`name` has finished a match of `deal` (its processes are stopped)."""
        playing = self._playing.get(name, {})
        playing[deal] = playing.get(deal, 1) - 1
        if playing[deal] <= 0:
            del playing[deal]

    def deals(self, name: str) -> set[int]:
        """The deals `name` plays now."""
        return set(self._playing.get(name, {}))

    def in_match(self) -> bool:
        """Whether a process is in a match now."""
        return any(w.process.returncode is None for w in self.taken)

    async def connected(self, warm: WarmBot) -> str | None:
        """Wait for the process to connect (None) or to die or time out (why)."""
        connected = asyncio.ensure_future(
            self.server.wait_for_pass(warm.seat_pass, self.connect_timeout))
        exited = asyncio.ensure_future(warm.process.wait())
        try:
            await asyncio.wait({connected, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            connected.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                warm.connection = await connected
        if warm.connection is not None:
            return None
        if warm.process.returncode is None:
            return f"did not connect within {self.connect_timeout:g} s"
        await asyncio.sleep(0.05)  # let the output reader catch the last words
        return warm.process.exit_summary(" before connecting")

    async def stop(self, warm: WarmBot) -> None:
        """Stop `warm`'s process (a spawned one's whole sandbox; not a fork server)."""
        if isinstance(warm.process, BotProcess):
            self.watch.forget(warm.process)
        self.server.passes.withdraw(warm.seat_pass)
        if warm.connection is not None:
            warm.connection.close(FaultKind.DISCONNECT, "bot process stopped")
        await warm.process.stop()
        self.live.discard(warm)
        self.taken.discard(warm)

    def sandboxes(self) -> list[BotProcess]:
        """The sandboxes of the spawned processes alive."""
        return [w.process for w in self.live if isinstance(w.process, BotProcess)]

    def _on_breach(self, warm: WarmBot, reason: str) -> None:
        log.warning("bot %s: process %s: %s", warm.bot, warm.process.label, reason)
        if warm.connection is not None:
            warm.connection.close(FaultKind.LIMIT, reason)
