"""Forked bot processes: a child per match from a fork server in the bot's sandbox.

Python SDK bots are forked (`forks.py`): a pool keeps, per bot, fork servers
started ahead of need (as many as the rest of the phase can use: `PhaseSeats`), and
forks a child when a match is about to start, from an idle server that has not heard
of the match's deal. A server whose child exited by itself is cleaned and kept for
another deal; one whose child was stopped goes with it. Which servers may outlive a
phase change: `BotPool.new_phase`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping

from cfarena.server.sandbox import BotProcess
from cfarena.server.tournament.forks import ForkedProcess, ForkPlan, ForkServer, ForkServerError
from cfarena.server.tournament.process_maker import ProcessMaker
from cfarena.server.tournament.start_failures import StartFailures
from cfarena.server.tournament.warm_processes import PhaseSeats, WarmBot, WarmProcesses

log = logging.getLogger("cfarena.tournament")


class ForkedSupply:
    """The fork servers of a pool's forked bots (`plans`: how each bot is forked; None
    for a bot that is spawned instead), keeping as many of each bot's started as the
    rest of the phase can use (`seats`; at most `warm`)."""

    def __init__(self, maker: ProcessMaker, processes: WarmProcesses,
                 failures: StartFailures, warm: Mapping[str, int], seats: PhaseSeats
                 ) -> None:
        self.maker = maker
        self.processes = processes
        self.failures = failures
        self.warm = warm
        self.seats = seats
        self.plans: dict[str, ForkPlan | None] = {n: maker.plan(n) for n in maker.commands}
        self.idle: dict[str, list[ForkServer]] = {n: [] for n in maker.commands}
        self.servers: set[ForkServer] = set()
        # the fork servers that may live across the next phase change (`new_phase`):
        # started before any bot process of the current phase ran (at the start, or by
        # `restart` after the host's reset), so what they mapped of the host's files was
        # cached before any bot could choose it, and never forked since
        self.clean: set[ForkServer] = set()
        self.changing = False  # between a phase change and `restart`: nothing is replenished
        self.closed = False  # the pool is closing: nothing more is started
        self._last_failure: dict[str, str] = {}

    def serves(self, name: str) -> bool:
        """Whether `name` is forked (else spawned)."""
        return self.plans[name] is not None

    async def start_first(self, name: str, count: int) -> None:
        """Start the first `count` fork servers of `name`: none started, it is spawned
        instead (a fresh interpreter per process)."""
        started = await asyncio.gather(*(self.start_server(name, count=False, clean=True)
                                         for _ in range(count)))
        if any(started):
            return
        log.info("bot %s: no fork server (%s); a fresh interpreter per process",
                 name, self._last_failure.get(name, "it did not start"))
        self.plans[name] = None
        self.failures.forgive(name)

    async def take(self, name: str, deal: int | None) -> WarmBot:
        """A child of `name` forked and connected, from a server that has not heard of
        `deal`; BotStartError if `name` is given up."""
        while True:
            if name in self.failures.given_up:
                raise self.failures.error(name)
            idle = self.idle[name]
            for gone in [s for s in idle if not s.alive]:
                await self.stop_server(gone)  # died while idle (killed, or found dirty)
            usable = [s for s in idle if s.idle and (deal is None or deal not in s.tainted)]
            if usable:
                server = usable[0]
                idle.remove(server)
            else:
                started = await self.start_server(name)
                if started is None:
                    continue
                server = started
                self.idle[name].remove(server)
            warm = await self._fork(server, name)
            if warm is None:
                continue
            if deal is not None:
                server.tainted.add(deal)  # no later child of this sandbox plays it
            self.replenish(name)
            return warm

    def replenish(self, name: str) -> None:
        """Start a fork server of `name` in the background if it has fewer than the rest
        of the phase can use (`PhaseSeats.wanted`). A server whose child is playing
        counts: it is back for the bot's next match (of another deal, within a phase)."""
        serving = [s for s in self.servers if s.bot == name and s.alive]
        if not self.closed and not self.changing and len(serving) < self.seats.wanted(name) \
                and self.processes.unstarted.get(name, 0) > 0:
            self.processes.in_background(self.start_server(name))

    async def check(self, name: str) -> None:
        """Fork one process of `name` and see it connect (BotStartError if it cannot);
        it is told to exit at once, and its fork server is ready for a match."""
        warm = await self.take(name, None)
        self.processes.need(name)  # it plays no match
        assert warm.connection is not None
        warm.connection.retire()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(warm.process.wait(), self.processes.connect_timeout)
        await self.release(warm)

    async def release(self, warm: WarmBot) -> None:
        """Stop a forked process after its match; one that has exited by itself leaves
        its fork server, cleaned, for another match."""
        server = warm.server
        process = warm.process
        assert server is not None
        if not process.exited_by_itself or not server.idle:
            await self.stop(warm)
            if self.plans.get(warm.bot) is not None:
                self.replenish(warm.bot)  # its server went with it
            return
        self.processes.server.passes.withdraw(warm.seat_pass)
        self.processes.live.discard(warm)
        if isinstance(process, ForkedProcess):
            await process.drained()  # all of its output, before the match is stored
        idle = self.idle[warm.bot]
        idle.append(server)
        # kept for the deals they have not heard of, up to twice the warm count
        while len(idle) > 2 * max(1, self.warm.get(warm.bot, 1)):
            spare = max(idle, key=lambda s: len(s.tainted))  # the least useful one
            idle.remove(spare)
            await self.stop_server(spare)

    async def restart(self) -> None:
        """Start the fork servers of a new phase, as many of each bot's as the phase can
        use (the clean ones kept count), all at once; replenishing resumes."""
        starts = []
        for name, idle in self.idle.items():
            if self.plans[name] is not None and name not in self.failures.given_up:
                wanted = min(self.seats.wanted(name), self.processes.unstarted.get(name, 0))
                starts += [self.start_server(name, clean=True)
                           for _ in range(wanted - len(idle))]
        await asyncio.gather(*starts)
        self.changing = False

    async def start_server(self, name: str, count: bool = True,
                           clean: bool = False) -> ForkServer | None:
        """A new fork server of `name`, idle; None when it failed (counted, unless
        `count` is false, towards giving the bot up). `clean`: no bot process of the
        phase has run yet (see `BotPool.new_phase`)."""
        plan = self.plans[name]
        assert plan is not None
        server = self.maker.fork_server(name, f"{name}#fork{self.processes.number()}", plan,
                                        self.processes.watch)
        self.servers.add(server)
        started_at = time.perf_counter()
        try:
            await server.start(self.processes.connect_timeout)
        except (ForkServerError, OSError) as exc:
            self.servers.discard(server)
            reason = f"could not be started: {exc}"
            if count:
                reason = self.failures.count(name, reason,
                                             self.failures.lag.froze_since(started_at))
            log.warning("bot %s: %s", name, reason)
            if count:
                self.failures.give_up_if_exhausted(
                    name, reason, server.sandbox.output.text() if server.sandbox else "")
            self._last_failure[name] = reason
            return None
        self.idle[name].append(server)
        if clean:
            self.clean.add(server)
        return server

    async def stop_server(self, server: ForkServer) -> None:
        """Stop `server` and whatever runs in its sandbox."""
        self.servers.discard(server)
        self.clean.discard(server)
        if server in self.idle.get(server.bot, []):
            self.idle[server.bot].remove(server)
        await server.stop()

    async def stop_servers(self, keep: Iterable[ForkServer | None] = ()) -> None:
        """Stop every fork server but those in `keep` and the clean ones (a phase
        change)."""
        kept = set(keep)
        stopped = {s for s in self.servers if s not in kept and s not in self.clean}
        await asyncio.gather(*(self.stop_server(s) for s in stopped), return_exceptions=True)

    async def stop_all(self) -> None:
        """Stop every fork server (the pool closes)."""
        await asyncio.gather(*(s.stop() for s in list(self.servers)), return_exceptions=True)
        self.servers.clear()

    async def stop(self, warm: WarmBot) -> None:
        """Stop a forked process and its fork server (it dies with it)."""
        await self.processes.stop(warm)
        if warm.server is not None:
            await self.stop_server(warm.server)

    def sandboxes(self) -> list[BotProcess]:
        """The sandboxes of the fork servers."""
        return [s.sandbox for s in self.servers if s.sandbox is not None]

    async def _fork(self, server: ForkServer, name: str) -> WarmBot | None:
        """A process forked by `server` and connected, or None (the failure counted)."""
        plan = self.plans[name]
        assert plan is not None
        processes = self.processes
        token, seat_pass = processes.issue(name)
        number = processes.number()
        playing = processes.deals(name)
        server.tainted |= playing  # its child lives while these are played
        self.clean.discard(server)  # stopped at the next phase change (`new_phase`)
        process = await server.fork(f"{name}#{number}", plan.args, self.maker.env(name, token))
        warm = WarmBot(name, process, seat_pass, server=server,
                       tainted=set(server.tainted) | playing)
        processes.add(warm)
        processes.starting(name)
        reason = await processes.connected(warm)
        if reason is None:
            self.failures.started(name)
            return warm
        reason = self.failures.count_process(name, warm.connection, warm.started_at, reason)
        await self.stop(warm)
        processes.need(name)
        log.warning("bot %s: process %s %s", name, process.label, reason)
        self.failures.give_up_if_exhausted(name, reason, process.output.text())
        return None
