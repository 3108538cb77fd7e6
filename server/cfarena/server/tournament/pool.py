"""Warm bot processes: one fresh (sandboxed) process per seat of every match.

A tournament never lets a bot process play two matches: whatever it learnt in
one (a deal it saw, a rotation it played) dies with it. Starting a Python bot
costs a few hundred milliseconds, so `BotPool` keeps processes started and
connected ahead of need: `take(bot)` hands out a process that has already
connected with its one-time pass, and starts its replacement while the match
runs; `release` kills a process after its match, sandbox and all.

Python SDK bots (`python -m cfarena.sdk run ...`, the bundled bots among them)
are forked instead, in a sandbox whose fork server has their runtime loaded
(`forks.py`): a child per match, forked when the match is about to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfarena.server.bundled_bots import bundled_command
from cfarena.server.referee import FaultKind, RefereeServer
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.tokens import SeatPass
from cfarena.server.sandbox import (
    SOCKET_IN_SANDBOX,
    BotProcess,
    LimitWatch,
    SandboxLimits,
    command_paths,
    exposed,
    python_paths,
)
from cfarena.server.tournament.forks import (
    ForkedProcess,
    ForkPlan,
    ForkServer,
    ForkServerError,
    fork_plan,
)

log = logging.getLogger("cfarena.tournament")

# consecutive processes of one bot that may fail to start before it is given up
START_ATTEMPTS = 3
EXCUSED_IN_A_ROW = 3 * START_ATTEMPTS  # start failures in a referee's freezes not counted


class BotStartError(Exception):
    """A bot whose processes do not start or connect (the message quotes why)."""


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


_SHELL = set(";|&<>$`()*?[]{}~\\'\"\n")


def sdk_plan(name: str, command: str | None) -> ForkPlan | None:
    """How a fork server runs `name`, or None when the command is not a plain SDK bot
    command on the arena's own interpreter."""
    if command is None:
        return fork_plan(bot_argv(name, None))
    if any(c in _SHELL for c in command):
        return None  # shell syntax: run it as written
    return fork_plan(shlex.split(command))


def bot_argv(name: str, command: str | None) -> list[str]:
    """The argv of a bot: a bundled bot by name, or a shell command line."""
    if command is None:
        return [*bundled_command(name), "--capacity", "1", "--retries", "3"]
    return ["/bin/sh", "-c", "exec " + command]


class BotPool:
    """Ready processes of every bot, started ahead of need (see the module docstring)."""

    def __init__(self, server: RefereeServer, launch: Launch,
                 commands: Mapping[str, str | None], warm: Mapping[str, int],
                 demand: Mapping[str, int], watch: LimitWatch | None = None) -> None:
        self.server = server
        self.launch = launch
        self.commands = dict(commands)
        self.warm = dict(warm)
        # processes each bot will still need (no spare is started beyond it)
        self._unstarted = dict(demand)
        self._ready: dict[str, asyncio.Queue[WarmBot]] = {n: asyncio.Queue() for n in commands}
        self._failures: dict[str, int] = dict.fromkeys(commands, 0)
        # start failures in a row not counted because the referee froze (`_count_failure`)
        self._excused: dict[str, int] = dict.fromkeys(commands, 0)
        self._dead: dict[str, str] = {}
        self._live: set[WarmBot] = set()
        self._taken: set[WarmBot] = set()  # handed out for a match by `take`, not released
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connecting: set[asyncio.Task[Any]] = set()  # of the processes not yet ready
        self.watch = watch or LimitWatch()
        self.started = 0
        self._running = False  # start() has checked that every bot starts
        self._closed = False  # close() has begun: nothing more is started
        self._playing: dict[str, dict[int, int]] = {}  # bot -> deal -> matches running
        # bots forked from fork servers: their Python and `python -m cfarena.sdk` arguments
        self._plans = {n: sdk_plan(n, c) if launch.sandbox else None
                       for n, c in commands.items()}
        self._idle: dict[str, list[ForkServer]] = {n: [] for n in commands}
        self._servers: set[ForkServer] = set()
        # the fork servers that may live across the next phase change (`new_phase`):
        # started before any bot process of the current phase ran (at the start, or by
        # `restart` after the host's reset), so what they mapped of the host's files was
        # cached before any bot could choose it, and never forked since
        self._clean: set[ForkServer] = set()
        self._changing = False  # between `new_phase` and `restart`: nothing is replenished
        self._last_server_failure: dict[str, str] = {}
        # the referee's gate stops a sandbox over its connection limit through the pool
        self.server.sandbox_faults.append(self._sandbox_fault)

    # ----------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Start the warm processes and wait for each bot's first one to connect.

        BotStartError naming the bot and quoting its output if one cannot start, or
        naming what it would be shown of the organiser's secrets (`Launch.hide`).
        """
        if self.launch.sandbox:
            for name in self.commands:
                found = exposed(self.binds(name), self.launch.hide)
                if found is not None:
                    secret, root = found
                    raise BotStartError(
                        f"bot {name!r} would be able to read {secret} (it is shown {root}): "
                        "keep the database and the log directory outside the bot's "
                        "directories, the system directories and Python's")
        # every bot at once; a failure is reported for the first bot (in order) that
        # failed. The fork servers first, before any bot's code runs (`new_phase`)
        for step in (self._start_servers, self._start_fresh, self._check_started):
            outcomes = await asyncio.gather(*(step(name) for name in self.commands),
                                            return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
        self._running = True

    def _first_count(self, name: str) -> int:
        return max(1, min(self.warm.get(name, 1), self._unstarted.get(name, 1)))

    async def _start_servers(self, name: str) -> None:
        """Start the first fork servers of `name` (if it is forked): none started, it
        gets a fresh interpreter per process."""
        if self._plans[name] is None:
            return
        started = await asyncio.gather(*(self._start_server(name, count=False, clean=True)
                                         for _ in range(self._first_count(name))))
        if any(started):
            return
        log.info("bot %s: no fork server (%s); a fresh interpreter per process",
                 name, self._last_server_failure.get(name, "it did not start"))
        self._plans[name] = None
        self._failures[name] = 0

    async def _start_fresh(self, name: str) -> None:
        """Start the first warm processes of `name` if it is not forked."""
        if self._plans[name] is None:
            for _ in range(self._first_count(name)):
                await self._spawn(name)

    async def _check_started(self, name: str) -> None:
        """Wait for the first process of `name` to connect (BotStartError if not)."""
        if self._plans[name] is not None:
            await self._check_forked(name)
            return
        first = await self._get_ready(name)
        self._ready[name].put_nowait(first)  # back in line: it was only a check

    async def close(self) -> None:
        """Stop every process still alive (also on failure or interrupt)."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(self._stop(w) for w in list(self._live)),
                             return_exceptions=True)
        await asyncio.gather(*(s.stop() for s in list(self._servers)), return_exceptions=True)
        self._servers.clear()
        await self.watch.close()
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
        self._changing = True
        for task in list(self._connecting):
            task.cancel()
        await asyncio.gather(*self._connecting, return_exceptions=True)
        while self._tasks:  # servers being started in the background: let them finish
            await asyncio.gather(*self._tasks, return_exceptions=True)
        kept = {w for w in self._taken if keep_playing}
        stale = [w for w in self._live if w not in kept]
        await asyncio.gather(*(self._stop(w) for w in stale), return_exceptions=True)
        for warm in stale:
            self._unstarted[warm.bot] = self._unstarted.get(warm.bot, 0) + 1
        serving = {w.server for w in kept}
        stopped = {s for s in self._servers if s not in serving and s not in self._clean}
        await asyncio.gather(*(self._stop_server(s) for s in stopped), return_exceptions=True)
        for ready in self._ready.values():  # emptied, not replaced: a `take` may wait on it
            while not ready.empty():
                ready.get_nowait()

    def playing(self) -> bool:
        """Whether a process of this pool is in a match now."""
        return any(w.process.returncode is None for w in self._taken)

    async def restart(self) -> None:
        """Start the warm processes of the next phase (after `new_phase` and the host's
        reset): the fork servers first, all of them before any bot process of the phase
        runs (they stay clean: see `new_phase`), then the fresh processes."""
        starts = []
        for name, idle in self._idle.items():
            if self._plans[name] is not None and name not in self._dead:
                wanted = min(self.warm.get(name, 1), self._unstarted.get(name, 0))
                starts += [self._start_server(name, clean=True)
                           for _ in range(wanted - len(idle))]
        await asyncio.gather(*starts)
        self._changing = False
        for name in self.commands:
            if self._plans[name] is not None or name in self._dead:
                continue
            for _ in range(min(self.warm.get(name, 1), self._unstarted.get(name, 0))):
                await self._spawn(name)

    # --------------------------------------------------------------- use
    def begin(self, name: str, deal: int) -> None:
        """`name` starts playing `deal`: no process of it alive now may ever play it."""
        self._playing.setdefault(name, {})[deal] = self._playing.get(name, {}).get(deal, 0) + 1
        for warm in self._live:
            if warm.bot == name:
                warm.tainted.add(deal)
                if warm.server is not None:
                    # its child could leave what it heard in its sandbox (the PID
                    # counter, the fork server's CPU counters: see forks.py)
                    warm.server.tainted.add(deal)

    def add_demand(self, name: str) -> None:
        """`name` has one match more to play than planned (a match played again): one
        process more is started for it ahead of need."""
        self._unstarted[name] = self._unstarted.get(name, 0) + 1

    def end(self, name: str, deal: int) -> None:
        """`name` has finished a match of `deal` (its processes are stopped)."""
        playing = self._playing.get(name, {})
        playing[deal] = playing.get(deal, 1) - 1
        if playing[deal] <= 0:
            del playing[deal]

    async def take(self, name: str, deal: int | None = None) -> WarmBot:
        """A connected process of `name` for one match (of `deal`); its replacement
        starts now. A process that was alive while `name` played `deal` is never
        used for it: it is stopped and a fresh one started instead.

        After `start()`, a bot whose processes keep failing to start is written off:
        `take` then hands out a seat that is not connected, whose match records a
        disconnect fault quoting why (the seat forfeits, the others play on).
        """
        warm = await self._take(name, deal)
        if warm.written_off is None:
            self._taken.add(warm)
        return warm

    async def _take(self, name: str, deal: int | None) -> WarmBot:
        if self._plans[name] is not None:
            return await self._take_forked(name, deal)
        while True:
            try:
                warm = await self._get_ready(name)
            except BotStartError as exc:
                if not self._running:
                    raise
                return self._written_off(name, str(exc))
            if deal is None or deal not in warm.tainted:
                break
            await self._stop(warm)  # alive during another rotation of this deal
            self._unstarted[name] = self._unstarted.get(name, 0) + 1
            await self._spawn(name)
        if self._unstarted.get(name, 0) > 0:
            await self._spawn(name)
        return warm

    def _written_off(self, name: str, reason: str) -> WarmBot:
        seat_pass = SeatPass(name, "")
        connection = BotConnection(name, 1, _NoStream(), closed=True,
                                   close_reason=(FaultKind.DISCONNECT, f"not connected: {reason}"))
        process = BotProcess(f"{name}#-", [], {}, sandbox=False)
        return WarmBot(name, process, seat_pass, connection, written_off=reason)

    async def release(self, warm: WarmBot) -> None:
        """Stop a process after its match (its whole sandbox). A forked process that
        has exited by itself leaves its fork server, cleaned, for another match."""
        self._taken.discard(warm)
        server = warm.server
        process = warm.process
        if server is None or not process.exited_by_itself or not server.idle:
            await self._stop(warm)
            if server is not None and self._plans.get(warm.bot) is not None:
                self._replenish(warm.bot)  # its server went with it
            return
        self.server.passes.withdraw(warm.seat_pass)
        self._live.discard(warm)
        if isinstance(process, ForkedProcess):
            await process.drained()  # all of its output, before the match is stored
        idle = self._idle[warm.bot]
        idle.append(server)
        # kept for the deals they have not heard of, up to twice the warm count
        while len(idle) > 2 * max(1, self.warm.get(warm.bot, 1)):
            spare = max(idle, key=lambda s: len(s.tainted))  # the least useful one
            idle.remove(spare)
            await self._stop_server(spare)

    def alive(self) -> int:
        """Processes started and not yet stopped."""
        return len(self._live)

    # ------------------------------------------------------- fork servers
    async def _take_forked(self, name: str, deal: int | None) -> WarmBot:
        while True:
            if name in self._dead:
                if not self._running:
                    raise BotStartError(self._dead[name])
                return self._written_off(name, self._dead[name])
            idle = self._idle[name]
            for gone in [s for s in idle if not s.alive]:
                await self._stop_server(gone)  # died while idle (killed, or found dirty)
            usable = [s for s in idle if s.idle and (deal is None or deal not in s.tainted)]
            if usable:
                server = usable[0]
                idle.remove(server)
            else:
                started = await self._start_server(name)
                if started is None:
                    continue
                server = started
                self._idle[name].remove(server)
            warm = await self._fork(server, name)
            if warm is None:
                continue
            if deal is not None:
                server.tainted.add(deal)  # no later child of this sandbox plays it
            self._replenish(name)
            return warm

    def _replenish(self, name: str) -> None:
        """Start a fork server of `name` in the background if it has fewer than its warm
        count. A server whose child is playing counts: it is back for the bot's next
        match (of another deal, within a phase)."""
        serving = [s for s in self._servers if s.bot == name and s.alive]
        if not self._closed and not self._changing and len(serving) < self.warm.get(name, 1) and \
                self._unstarted.get(name, 0) > 0:
            task = asyncio.get_running_loop().create_task(self._start_server(name))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _check_forked(self, name: str) -> None:
        """Fork one process of `name` and see it connect (BotStartError if it cannot);
        it is told to exit at once, and its fork server is ready for a match."""
        warm = await self._take_forked(name, None)
        self._unstarted[name] = self._unstarted.get(name, 0) + 1  # it plays no match
        assert warm.connection is not None
        warm.connection.retire()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(warm.process.wait(), self.launch.connect_timeout)
        await self.release(warm)

    async def _start_server(self, name: str, count: bool = True,
                            clean: bool = False) -> ForkServer | None:
        """A new fork server of `name`, idle; None when it failed (counted, unless
        `count` is false, towards writing the bot off). `clean`: no bot process of the
        phase has run yet (see `new_phase`)."""
        plan = self._plans[name]
        assert plan is not None
        self.started += 1
        server = ForkServer(
            name, f"{name}#fork{self.started}", self._env(""), self.watch, plan.preload,
            arena_socket=self.server.unix_socket, binds=self.binds(name),
            limits=self.launch.limits, workdir=self.launch.cwd)
        self._servers.add(server)
        started_at = time.perf_counter()
        try:
            await server.start(self.launch.connect_timeout)
        except (ForkServerError, OSError) as exc:
            self._servers.discard(server)
            reason = f"could not be started: {exc}"
            if count:
                reason = self._count(name, reason, self.server.lag.froze_since(started_at))
            log.warning("bot %s: %s", name, reason)
            if count and self._failures[name] >= START_ATTEMPTS:
                self._dead[name] = f"bot {name!r} {reason}"
            self._last_server_failure[name] = reason
            return None
        self._idle[name].append(server)
        if clean:
            self._clean.add(server)
        return server

    async def _fork(self, server: ForkServer, name: str) -> WarmBot | None:
        """A process forked by `server` and connected, or None (the failure counted)."""
        plan = self._plans[name]
        assert plan is not None
        token, seat_pass = self.server.passes.issue(name)
        self.started += 1
        playing = set(self._playing.get(name, {}))
        server.tainted |= playing  # its child lives while these are played
        self._clean.discard(server)  # stopped at the next phase change (`new_phase`)
        process = await server.fork(f"{name}#{self.started}", plan.args, self._env(token))
        warm = WarmBot(name, process, seat_pass, server=server,
                       tainted=set(server.tainted) | playing)
        process.on_breach = lambda _proc, reason: self._on_breach(warm, reason)
        self._live.add(warm)
        self._unstarted[name] = self._unstarted.get(name, 1) - 1
        reason = await self._connected(warm)
        if reason is None:
            self._failures[name] = self._excused[name] = 0
            return warm
        reason = self._count_failure(warm, reason)
        await self._stop(warm)
        self._unstarted[name] += 1
        log.warning("bot %s: process %s %s", name, process.label, reason)
        if self._failures[name] >= START_ATTEMPTS:
            self._dead[name] = f"bot {name!r} {reason}"
        return None

    async def _stop_server(self, server: ForkServer) -> None:
        self._servers.discard(server)
        self._clean.discard(server)
        if server in self._idle.get(server.bot, []):
            self._idle[server.bot].remove(server)
        await server.stop()

    def binds(self, name: str) -> list[Path]:
        """What a sandbox of `name` is shown besides the system: the Python it runs on,
        the paths on its command line, the organiser's `--sandbox-bind`s."""
        command = bot_argv(name, self.commands[name])
        shown = command if self.commands[name] is None else \
            shlex.split(self.commands[name] or "")
        return [*python_paths(), *command_paths(shown, self.launch.cwd), *self.launch.binds]

    # ---------------------------------------------------------- internals
    async def _get_ready(self, name: str) -> WarmBot:
        while True:
            if name in self._dead and self._ready[name].empty():
                raise BotStartError(self._dead[name])
            warm = await self._ready[name].get()
            if warm.failure is not None:  # a start failed: the reason, or try again
                continue
            assert warm.connection is not None
            if not warm.connection.closed and warm.process.returncode is None:
                return warm
            await self._failed(warm, f"lost its connection before its match "
                                     f"({warm.process.exit_summary()})")

    async def _spawn(self, name: str) -> None:
        token, seat_pass = self.server.passes.issue(name)
        launch = self.launch
        command = bot_argv(name, self.commands[name])
        env = self._env(token)
        binds = self.binds(name) if launch.sandbox else []
        self._unstarted[name] = self._unstarted.get(name, 1) - 1
        self.started += 1
        process = BotProcess(
            f"{name}#{self.started}", command, env, socket=self.server.unix_socket,
            binds=binds, limits=launch.limits, sandbox=launch.sandbox,
            workdir=launch.cwd,
        )
        warm = WarmBot(name, process, seat_pass, tainted=set(self._playing.get(name, {})))
        process.on_breach = lambda _proc, reason: self._on_breach(warm, reason)
        self._live.add(warm)
        try:
            await process.start()
        except OSError as exc:
            warm.failure = f"cannot start: {exc}"
            await self._failed(warm, warm.failure)
            return
        self.watch.watch(process)
        task = asyncio.get_running_loop().create_task(self._connect(warm))
        self._tasks.add(task)
        self._connecting.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._connecting.discard)

    def _env(self, token: str) -> dict[str, str]:
        """A bot process's whole environment (an allow-list, nothing of the referee's)."""
        sandbox = self.launch.sandbox
        env = {
            "CFARENA_CAPACITY": "1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": "/tmp" if sandbox else os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "CFARENA_SERVER": f"unix:{SOCKET_IN_SANDBOX}" if sandbox else self.server.address,
        }
        if token:
            env["CFARENA_TOKEN"] = token
        return env

    async def _connect(self, warm: WarmBot) -> None:
        """Wait for the process to connect (ready) or die (failed)."""
        try:
            await self._await_connection(warm)
        except Exception as exc:  # never leave a take() waiting for a process
            log.exception("bot %s: process %s", warm.bot, warm.process.label)
            await self._failed(warm, f"could not be started: {type(exc).__name__}: {exc}")

    async def _await_connection(self, warm: WarmBot) -> None:
        reason = await self._connected(warm)
        if reason is None:
            self._failures[warm.bot] = self._excused[warm.bot] = 0
            self._ready[warm.bot].put_nowait(warm)
            return
        warm.failure = reason
        await self._failed(warm, reason)

    async def _connected(self, warm: WarmBot) -> str | None:
        """Wait for the process to connect (None) or to die or time out (why)."""
        connected = asyncio.ensure_future(
            self.server.wait_for_pass(warm.seat_pass, self.launch.connect_timeout))
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
            return f"did not connect within {self.launch.connect_timeout:g} s"
        await asyncio.sleep(0.05)  # let the output reader catch the last words
        return warm.process.exit_summary() + " before connecting"

    async def _failed(self, warm: WarmBot, reason: str) -> None:
        name = warm.bot
        warm.failure = reason
        reason = self._count_failure(warm, reason)  # before `_stop` closes its connection
        await self._stop(warm)
        log.warning("bot %s: process %s %s", name, warm.process.label, reason)
        if self._failures[name] >= START_ATTEMPTS:
            self._dead[name] = f"bot {name!r} {reason}"
            self._ready[name].put_nowait(warm)  # wakes a waiting take()
            return
        self._unstarted[name] = self._unstarted.get(name, 0) + 1
        await self._spawn(name)

    def _count_failure(self, warm: WarmBot, reason: str) -> str:
        """Count `warm`'s failure to start towards writing its bot off, unless it may
        be the referee's doing (referee/lag.py): its connection ended during or just
        after a freeze (`ended_by_stall`), or, never connected, it was started before a
        freeze that came before its failure (it could not connect to a frozen referee).
        At most EXCUSED_IN_A_ROW such failures of one bot in a row are not counted (a
        bot that keeps failing on a referee that keeps freezing is written off all the
        same). `reason`, as it is logged."""
        lag = self.server.lag
        connection = warm.connection
        if connection is not None and connection.closed:
            excused = lag.ended_by_stall(connection.closed_at)
        else:
            excused = lag.froze_since(warm.started_at)
        return self._count(warm.bot, reason, excused)

    def _count(self, name: str, reason: str, excused: bool) -> str:
        """Count a start failure of `name` unless `excused` (and not excused too often
        in a row); `reason`, as it is logged."""
        if excused and self._excused[name] < EXCUSED_IN_A_ROW:
            self._excused[name] += 1
            return f"{reason} (the referee froze meanwhile: not counted against the bot)"
        self._failures[name] += 1
        return reason

    def _sandbox_fault(self, namespace: str, reason: str) -> None:
        """The referee found the sandbox with PID namespace `namespace` over a limit
        (its connections): if it is one of ours, it is stopped as a breach."""
        sandboxes = [s.sandbox for s in self._servers if s.sandbox is not None]
        sandboxes += [w.process for w in self._live if isinstance(w.process, BotProcess)]
        for sandbox in sandboxes:
            if sandbox.pid_namespace == namespace and sandbox.returncode is None:
                sandbox.breached(reason)
                return

    def _on_breach(self, warm: WarmBot, reason: str) -> None:
        log.warning("bot %s: process %s: %s", warm.bot, warm.process.label, reason)
        if warm.connection is not None:
            warm.connection.close(FaultKind.LIMIT, reason)

    async def _stop(self, warm: WarmBot) -> None:
        if isinstance(warm.process, BotProcess):
            self.watch.forget(warm.process)
        self.server.passes.withdraw(warm.seat_pass)
        if warm.connection is not None:
            warm.connection.close(FaultKind.DISCONNECT, "bot process stopped")
        await warm.process.stop()
        self._live.discard(warm)
        self._taken.discard(warm)
        if warm.server is not None:  # a forked process dies with its fork server
            await self._stop_server(warm.server)


class _NoStream:
    """The stream of a seat whose bot could not be started: nothing is ever written."""

    async def write(self, message: object) -> None:
        raise ConnectionError("not connected")


def needed_processes(seatings: Sequence[Sequence[str]]) -> dict[str, int]:
    """How many processes of each bot a list of matches needs (one per seat)."""
    total: dict[str, int] = {}
    for seats in seatings:
        for name in seats:
            total[name] = total.get(name, 0) + 1
    return total
