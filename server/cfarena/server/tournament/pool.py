"""Warm bot processes: one fresh (sandboxed) process per seat of every match.

A tournament never lets a bot process play two matches: whatever it learnt in
one (a deal it saw, a rotation it played) dies with it. Starting a Python bot
costs a few hundred milliseconds, so `BotPool` keeps processes started and
connected ahead of need: `take(bot)` hands out a process that has already
connected with its one-time pass, and starts its replacement while the match
runs; `release` kills a process after its match, sandbox and all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.server.botproc import bundled_command
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

log = logging.getLogger("cfarena.tournament")

# consecutive processes of one bot that may fail to start before it is given up
START_ATTEMPTS = 3


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
    process: BotProcess
    seat_pass: SeatPass
    connection: BotConnection | None = None
    failure: str | None = None  # why it never became ready
    written_off: str | None = None  # the bot cannot be started: why (its seat forfeits)
    # deals its bot played while this process was alive: it never plays one of them
    # (it could have listened to the other process through anything they share)
    tainted: set[int] = field(default_factory=set)


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
        self._dead: dict[str, str] = {}
        self._live: set[WarmBot] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.watch = watch or LimitWatch()
        self.started = 0
        self._running = False  # start() has checked that every bot starts
        self._playing: dict[str, dict[int, int]] = {}  # bot -> deal -> matches running

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
        for name in self.commands:
            for _ in range(max(1, min(self.warm.get(name, 1), self._unstarted.get(name, 1)))):
                await self._spawn(name)
        for name in self.commands:
            first = await self._get_ready(name)
            self._ready[name].put_nowait(first)  # back in line: it was only a check
        self._running = True

    async def close(self) -> None:
        """Stop every process still alive (also on failure or interrupt)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(self._stop(w) for w in list(self._live)),
                             return_exceptions=True)
        await self.watch.close()

    # --------------------------------------------------------------- use
    def begin(self, name: str, deal: int) -> None:
        """`name` starts playing `deal`: no process of it alive now may ever play it."""
        self._playing.setdefault(name, {})[deal] = self._playing.get(name, {}).get(deal, 0) + 1
        for warm in self._live:
            if warm.bot == name:
                warm.tainted.add(deal)

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
        """Stop a process after its match (its whole sandbox)."""
        await self._stop(warm)

    def alive(self) -> int:
        """Processes started and not yet stopped."""
        return len(self._live)

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
        env = {
            "CFARENA_TOKEN": token,
            "CFARENA_CAPACITY": "1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": "/tmp" if launch.sandbox else os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
        }
        if launch.sandbox:
            env["CFARENA_SERVER"] = f"unix:{SOCKET_IN_SANDBOX}"
        else:
            env["CFARENA_SERVER"] = self.server.address
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
        task.add_done_callback(self._tasks.discard)

    async def _connect(self, warm: WarmBot) -> None:
        """Wait for the process to connect (ready) or die (failed)."""
        try:
            await self._await_connection(warm)
        except Exception as exc:  # never leave a take() waiting for a process
            log.exception("bot %s: process %s", warm.bot, warm.process.label)
            await self._failed(warm, f"could not be started: {type(exc).__name__}: {exc}")

    async def _await_connection(self, warm: WarmBot) -> None:
        proc = warm.process.proc
        assert proc is not None
        connected = asyncio.ensure_future(
            self.server.wait_for_pass(warm.seat_pass, self.launch.connect_timeout))
        exited = asyncio.ensure_future(proc.wait())
        try:
            await asyncio.wait({connected, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            connected.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                warm.connection = await connected
        if warm.connection is not None:
            self._failures[warm.bot] = 0
            self._ready[warm.bot].put_nowait(warm)
            return
        if proc.returncode is None:
            reason = f"did not connect within {self.launch.connect_timeout:g} s"
        else:
            await asyncio.sleep(0.05)  # let the output reader catch the last words
            reason = warm.process.exit_summary() + " before connecting"
        warm.failure = reason
        await self._failed(warm, reason)

    async def _failed(self, warm: WarmBot, reason: str) -> None:
        name = warm.bot
        warm.failure = reason
        await self._stop(warm)
        self._failures[name] += 1
        log.warning("bot %s: process %s %s", name, warm.process.label, reason)
        if self._failures[name] >= START_ATTEMPTS:
            self._dead[name] = f"bot {name!r} {reason}"
            self._ready[name].put_nowait(warm)  # wakes a waiting take()
            return
        self._unstarted[name] = self._unstarted.get(name, 0) + 1
        await self._spawn(name)

    def _on_breach(self, warm: WarmBot, reason: str) -> None:
        log.warning("bot %s: process %s: %s", warm.bot, warm.process.label, reason)
        if warm.connection is not None:
            warm.connection.close(FaultKind.LIMIT, reason)

    async def _stop(self, warm: WarmBot) -> None:
        self.watch.forget(warm.process)
        self.server.passes.withdraw(warm.seat_pass)
        if warm.connection is not None:
            warm.connection.close(FaultKind.DISCONNECT, "bot process stopped")
        await warm.process.stop()
        self._live.discard(warm)


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
