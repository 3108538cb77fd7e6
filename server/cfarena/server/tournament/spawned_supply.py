"""Spawned bot processes: a fresh process per match, started ahead of need.

For a bot that is not forked (a command with shell syntax, or no sandbox), each
process is started and connected with its one-time pass before a match asks
for it; `take` hands out a ready one and starts its replacement while the match
runs. A process that fails to start is replaced until its bot is given up.
"""

from __future__ import annotations

import asyncio
import logging

from cfarena.server.sandbox.failure_lines import around
from cfarena.server.tournament.process_maker import ProcessMaker
from cfarena.server.tournament.start_failures import StartFailures
from cfarena.server.tournament.warm_processes import PhaseSeats, WarmBot, WarmProcesses

log = logging.getLogger("cfarena.tournament")


class SpawnedSupply:
    """The ready processes of a pool's spawned bots, in the order they connected."""

    def __init__(self, maker: ProcessMaker, processes: WarmProcesses,
                 failures: StartFailures, seats: PhaseSeats) -> None:
        self.maker = maker
        self.processes = processes
        self.failures = failures
        self.seats = seats  # what the rest of the phase can use
        self._waiting: dict[str, int] = {}  # takes of each bot waiting for a process
        self._claimed: set[WarmBot] = set()  # got by a take that has not returned yet
        self._ready: dict[str, asyncio.Queue[WarmBot]] = {
            n: asyncio.Queue() for n in maker.commands}

    async def spawn(self, name: str) -> None:
        """Start a process of `name`; it is ready once connected (in the background)."""
        processes = self.processes
        token, seat_pass = processes.issue(name)
        processes.starting(name)
        process = self.maker.process(name, f"{name}#{processes.number()}", token)
        warm = WarmBot(name, process, seat_pass, tainted=processes.deals(name))
        processes.add(warm)
        try:
            await process.start()
        except OSError as exc:
            warm.failure = f"cannot start: {exc}"
            await self._failed(warm, warm.failure)
            return
        processes.watch.watch(process)
        processes.in_background(self._connect(warm), connecting=True)

    async def take(self, name: str, deal: int | None) -> WarmBot:
        """A connected process of `name` that was not alive while `name` played `deal`
        (one that was is stopped and replaced); its replacement starts now if the rest
        of the phase can use it. BotStartError if `name` is given up."""
        self._waiting[name] = self._waiting.get(name, 0) + 1
        try:
            if self._spare(name) < self._waiting[name] and name not in self.failures.given_up:
                await self.spawn(name)  # none was started ahead for it (a match played again)
            while True:
                warm = await self._get_ready(name)
                if deal is None or deal not in warm.tainted:
                    break
                await self.processes.stop(warm)  # alive during another rotation of this deal
                self.processes.need(name)
                await self.spawn(name)
        finally:
            self._waiting[name] -= 1
        self._claimed.add(warm)
        try:
            wanted = self._waiting[name] + self.seats.wanted(name)
            if self.processes.unstarted.get(name, 0) > 0 and self._spare(name) < wanted:
                await self.spawn(name)
        finally:
            self._claimed.discard(warm)
        return warm

    def short(self, name: str) -> int:
        """Takes of `name` waiting that no spare process will serve."""
        return max(0, self._waiting.get(name, 0) - self._spare(name))

    def _spare(self, name: str) -> int:
        """Processes of `name` alive (ready or connecting) that no take holds."""
        return sum(1 for w in self.processes.live if w.bot == name
                   and w not in self.processes.taken and w not in self._claimed)

    async def check(self, name: str) -> None:
        """Wait for the first process of `name` to connect (BotStartError if not)."""
        first = await self._get_ready(name)
        self._ready[name].put_nowait(first)  # back in line: it was only a check

    def forget_ready(self) -> None:
        """Empty the lines of ready processes (they are stopped: a phase change)."""
        for ready in self._ready.values():  # emptied, not replaced: a `take` may wait on it
            while not ready.empty():
                ready.get_nowait()

    async def _get_ready(self, name: str) -> WarmBot:
        while True:
            if name in self.failures.given_up and self._ready[name].empty():
                raise self.failures.error(name)
            warm = await self._ready[name].get()
            if warm.failure is not None:  # a start failed: the reason, or try again
                continue
            assert warm.connection is not None
            if not warm.connection.closed and warm.process.returncode is None:
                return warm
            await self._failed(warm, around(warm.process.exit_summary(),
                                            "lost its connection before its match (", ")"))

    async def _connect(self, warm: WarmBot) -> None:
        """Wait for the process to connect (ready) or die (failed)."""
        try:
            reason = await self.processes.connected(warm)
            if reason is None:
                self.failures.started(warm.bot)
                self._ready[warm.bot].put_nowait(warm)
                return
            warm.failure = reason
            await self._failed(warm, reason)
        except Exception as exc:  # never leave a take() waiting for a process
            log.exception("bot %s: process %s", warm.bot, warm.process.label)
            await self._failed(warm, f"could not be started: {type(exc).__name__}: {exc}")

    async def _failed(self, warm: WarmBot, reason: str) -> None:
        name = warm.bot
        warm.failure = reason
        # counted before `stop` closes its connection
        reason = self.failures.count_process(name, warm.connection, warm.started_at, reason)
        await self.processes.stop(warm)
        log.warning("bot %s: process %s %s", name, warm.process.label, reason)
        if self.failures.give_up_if_exhausted(name, reason, warm.process.output.text()):
            self._ready[name].put_nowait(warm)  # wakes a waiting take()
            return
        self.processes.need(name)
        await self.spawn(name)
