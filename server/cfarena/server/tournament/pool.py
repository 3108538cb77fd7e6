"""Warm bot processes: one fresh (sandboxed) process per seat of every match.

A tournament never lets a bot process play two matches: whatever it learnt in
one (a deal it saw, a rotation it played) dies with it. Starting a Python bot
costs a few hundred milliseconds, so `BotPool` keeps processes started and
connected ahead of need: `take(bot)` hands out a process that has already
connected with its one-time pass, and starts its replacement while the match
runs if the rest of the phase can use it (`PhaseSeats`: a process started for
nothing would be stopped unused at the phase change); `release` kills a process
after its match, sandbox and all.

Python SDK bots (`python -m cfarena.sdk run ...`, the bundled bots among them)
are forked instead, in a sandbox whose fork server has their runtime loaded
(`forks.py`): a child per match, forked when the match is about to start.

The rooms of the pool: `process_maker.py` (how a bot's process is made),
`warm_processes.py` (the processes alive, what each bot still needs, the deals
played now), `spawned_supply.py` and `forked_supply.py` (the two ways a bot's
processes are started ahead of need) and `start_failures.py` (when a bot is
given up). `BotPool` holds them together: the pool's lifecycle and its phases.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.server.referee import RefereeServer
from cfarena.server.sandbox import LimitWatch, SandboxLimits, exposed
from cfarena.server.tournament.forked_supply import ForkedSupply
from cfarena.server.tournament.process_maker import ProcessMaker
from cfarena.server.tournament.spawned_supply import SpawnedSupply
from cfarena.server.tournament.start_failures import BotStartError, StartFailures
from cfarena.server.tournament.warm_processes import (
    PhaseSeats,
    WarmBot,
    WarmProcesses,
    written_off_seat,
)


@dataclass(frozen=True, slots=True)
class Launch:
    """How the arena starts bot processes."""

    sandbox: bool = True
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    binds: tuple[Path, ...] = ()  # extra read-only paths for every sandbox
    # what no sandbox may be shown (the database files, the log directory): a run
    # whose bots would see one refuses to start
    hide: tuple[Path, ...] = ()
    cwd: Path = field(default_factory=Path.cwd)
    connect_timeout: float = 30.0


class BotPool:
    """Ready processes of every bot, started ahead of need (see the module docstring)."""

    def __init__(self, server: RefereeServer, launch: Launch,
                 commands: Mapping[str, str | None], warm: Mapping[str, int],
                 demand: Mapping[str, int], watch: LimitWatch | None = None,
                 phase_seats: Mapping[int, Mapping[str, int]] | None = None,
                 settings: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.server = server
        self.launch = launch
        self.warm = dict(warm)
        # what each phase can still use: no process is started ahead that cannot be
        self.seats = PhaseSeats(phase_seats, self.warm)
        self.maker = ProcessMaker(server, commands, sandbox=launch.sandbox,
                                  limits=launch.limits, cwd=launch.cwd, binds=launch.binds,
                                  settings=settings)
        self.processes = WarmProcesses(server, watch or LimitWatch(), launch.connect_timeout,
                                       demand)
        self.failures = StartFailures(commands, server.lag)
        self.spawned = SpawnedSupply(self.maker, self.processes, self.failures, self.seats)
        self.forked = ForkedSupply(self.maker, self.processes, self.failures, self.warm,
                                   self.seats)
        self._running = False  # start() has checked that every bot starts
        # the referee's gate stops a sandbox over its connection limit through the pool
        self.server.sandbox_faults.append(self._sandbox_fault)

    # ----------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Start the warm processes and wait for each bot's first one to connect.

        BotStartError naming the bot and quoting its output if one cannot start, or
        naming what it would be shown of the organiser's secrets (`Launch.hide`).
        """
        if self.launch.sandbox:
            for name in self.maker.commands:
                found = exposed(self.maker.binds(name), self.launch.hide)
                if found is not None:
                    secret, root = found
                    raise BotStartError(
                        f"bot {name!r} would be able to read {secret} (it is shown {root}): "
                        "keep the database and the log directory outside the bot's "
                        "directories, the system directories and Python's")
        # every bot at once; a failure is reported for the first bot (in order) that
        # failed. The fork servers first, before any bot's code runs (`new_phase`)
        for step in (self._start_servers, self._start_fresh, self._check_started):
            outcomes = await asyncio.gather(*(step(name) for name in self.maker.commands),
                                            return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
        self._running = True

    def _first_count(self, name: str) -> int:
        """The processes (or fork servers) of `name` started first: what the first phase
        can use, and at least one (the start's check; a forked one is then free for a
        match of the phase)."""
        return max(1, min(self.seats.wanted(name), self.processes.unstarted.get(name, 1)))

    async def _start_servers(self, name: str) -> None:
        """Start the first fork servers of `name` (if it is forked)."""
        if self.forked.serves(name):
            await self.forked.start_first(name, self._first_count(name))

    async def _start_fresh(self, name: str) -> None:
        """Start the first warm processes of `name` if it is not forked."""
        if not self.forked.serves(name):
            for _ in range(self._first_count(name)):
                await self.spawned.spawn(name)

    async def _check_started(self, name: str) -> None:
        """Wait for the first process of `name` to connect (BotStartError if not)."""
        if self.forked.serves(name):
            await self.forked.check(name)
        else:
            await self.spawned.check(name)

    async def close(self) -> None:
        """Stop every process still alive (also on failure or interrupt)."""
        self.forked.closed = True
        tasks = self.processes.tasks
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(self._stop(w) for w in list(self.processes.live)),
                             return_exceptions=True)
        await self.forked.stop_all()
        await self.processes.watch.close()
        with contextlib.suppress(ValueError):
            self.server.sandbox_faults.remove(self._sandbox_fault)

    async def new_phase(self, keep_playing: bool = False) -> None:
        """Stop every bot process alive, warm ones included, and start the warm ones
        afresh once `restart` is called (after the host's reset): a process alive during
        the phase that ended could otherwise carry what it learnt past the reset
        (schedule.phases).

        Fork servers are stopped too, but for those started before any bot process of
        the ending phase ran that never forked since:
        - one that forked a child keeps bits in its sandbox that the server's cleaner
          cannot reset (its PID counter, its tmpfs's inode counter), which a child of
          the next phase could read and relay (through the page cache, open within a
          phase) to the bot's process playing the same deal;
        - one started while bots of the phase ran has pages of the host's files mapped
          that the kernel mapped around its own faults (fault-around, 64 KiB windows):
          pages a bot had just read on purpose among them. A mapped page outlives the
          drop of the page cache, so the next phase could read them back.

        With `keep_playing` (another tournament's phase change in the same worker), the
        processes in a match and their fork servers are kept (`playing` says if any)."""
        processes = self.processes
        self.forked.changing = True
        for task in list(processes.connecting):
            task.cancel()
        await asyncio.gather(*processes.connecting, return_exceptions=True)
        while processes.tasks:  # servers being started in the background: let them finish
            await asyncio.gather(*processes.tasks, return_exceptions=True)
        kept = {w for w in processes.taken if keep_playing}
        stale = [w for w in processes.live if w not in kept]
        await asyncio.gather(*(self._stop(w) for w in stale), return_exceptions=True)
        for warm in stale:
            processes.need(warm.bot)
        await self.forked.stop_servers(keep={w.server for w in kept})
        self.spawned.forget_ready()

    def enter_phase(self, phase: int) -> None:
        """The matches played from now on are of `phase` (before `restart`): what is
        started ahead of need is what this phase can use."""
        self.seats.phase = phase

    def playing(self) -> bool:
        """Whether a process of this pool is in a match now."""
        return self.processes.in_match()

    async def restart(self) -> None:
        """Start the warm processes of the next phase (after `new_phase` and the host's
        reset): the fork servers first, all of them before any bot process of the phase
        runs (they stay clean: see `new_phase`), then the fresh processes."""
        await self.forked.restart()
        for name in self.maker.commands:
            if self.forked.serves(name) or name in self.failures.given_up:
                continue
            # and one for each take still waiting: `new_phase` stopped the process it
            # was waiting for (a neighbour's phase change), and its seat is no longer
            # among what the phase can use
            ahead = min(self.seats.wanted(name), self.processes.unstarted.get(name, 0))
            for _ in range(max(ahead, self.spawned.short(name))):
                await self.spawned.spawn(name)

    # --------------------------------------------------------------- use
    def begin(self, name: str, deal: int) -> None:
        """`name` starts playing `deal`: no process of it alive now may ever play it."""
        self.processes.begin(name, deal)

    def add_demand(self, name: str) -> None:
        """`name` has one match more to play than planned (a match played again): one
        process more is started for it ahead of need."""
        self.processes.need(name)
        self.seats.add(name)

    def schedule(self, phase_seats: Mapping[int, Mapping[str, int]]) -> None:
        """Matches were scheduled since `start` (a bot test's next batch; `phase_seats`:
        phase -> bot -> the seats it holds in them): one process more per seat is
        needed, and their phases can use as many started ahead."""
        for seats in phase_seats.values():
            for name, count in seats.items():
                self.processes.need(name, count)
        self.seats.schedule(phase_seats)

    def end(self, name: str, deal: int) -> None:
        """`name` has finished a match of `deal` (its processes are stopped)."""
        self.processes.end(name, deal)

    async def take(self, name: str, deal: int | None = None) -> WarmBot:
        """A connected process of `name` for one match (of `deal`); its replacement
        starts now. A process that was alive while `name` played `deal` is never
        used for it: it is stopped and a fresh one started instead.

        After `start()`, a bot whose processes keep failing to start is written off:
        `take` then hands out a seat that is not connected, whose match records a
        disconnect fault quoting why (the seat forfeits, the others play on).
        """
        self.seats.took(name)  # before the supply takes: its replacement is counted
        try:
            if self.forked.serves(name):
                warm = await self.forked.take(name, deal)
            else:
                warm = await self.spawned.take(name, deal)
        except BotStartError as exc:
            if not self._running:
                raise
            return written_off_seat(name, str(exc), exc.output)
        self.processes.taken.add(warm)
        return warm

    async def release(self, warm: WarmBot) -> None:
        """Stop a process after its match (its whole sandbox). A forked process that
        has exited by itself leaves its fork server, cleaned, for another match."""
        self.processes.taken.discard(warm)
        if warm.server is None:
            await self.processes.stop(warm)
        else:
            await self.forked.release(warm)

    def alive(self) -> int:
        """Processes started and not yet stopped."""
        return len(self.processes.live)

    # ---------------------------------------------------------- internals
    async def _stop(self, warm: WarmBot) -> None:
        if warm.server is None:
            await self.processes.stop(warm)
        else:
            await self.forked.stop(warm)

    def _sandbox_fault(self, namespace: str, reason: str) -> None:
        """The referee found the sandbox with PID namespace `namespace` over a limit
        (its connections): if it is one of ours, it is stopped as a breach."""
        for sandbox in self.forked.sandboxes() + self.processes.sandboxes():
            if sandbox.pid_namespace == namespace and sandbox.returncode is None:
                sandbox.breached(reason)
                return


def needed_processes(seatings: Sequence[Sequence[str]]) -> dict[str, int]:
    """How many processes of each bot a list of matches needs (one per seat)."""
    total: dict[str, int] = {}
    for seats in seatings:
        for name in seats:
            total[name] = total.get(name, 0) + 1
    return total
