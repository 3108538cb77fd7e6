"""Fork servers: one sandbox per bot runtime, a freshly forked bot process per match.

A Python SDK bot (`python -m cfarena.sdk run TARGET`, every bundled bot among
them) spends ~100 ms of CPU importing gRPC, protobuf and the SDK before it plays;
for fast bots that is more than the match itself. `ForkServer` starts
`python -m cfarena.sdk.forkserver` in a sandbox (`sandbox.BotProcess`), which
imports that runtime once, never the bot's own code, and forks a child per match
that imports the bot and plays it (`ForkedProcess`). After a child ends, the
server kills whatever else runs in the sandbox and empties its /tmp and /dev/shm.

A sandbox is shared by its successive children. As root, the arena gives each
child a user of its own (`own_users`): a child cannot signal or trace the fork
server, and the server removes every process, file and IPC object of the
child's user before the next child starts. Still, as a second line, the pool
never forks a child for a deal that an earlier child of the same sandbox played;
and where children share the server's user (not root: bwrap's user namespace
maps one user), not for a deal that its bot played while a child of this
sandbox was alive either (see `BotPool`). The watchdog charges each child, not
the runtime, and each child has the whole budget (`LimitWatch.count_from_now`):
with cgroups, what the sandbox uses beyond what it used when the child was
forked (the kernel's memory and process limits move up by the runtime's share;
pages the child shares with the server count once, for the server, and what it
copies or allocates counts for the child); without, the memory and CPU of
bwrap's init and of the fork server are not counted, and the CPU count starts
afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.machinery
import importlib.util
import json
import os
import shutil
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.bots import BUNDLED
from cfarena.server.own_tasks import settle
from cfarena.server.sandbox import (
    BotProcess,
    CapturedOutput,
    LimitWatch,
    MatchProcess,
    SandboxLimits,
    random_uid,
)

MODULE = "cfarena.sdk.forkserver"
_SDK_RUN = ["-m", "cfarena.sdk", "run"]


class ForkServerError(Exception):
    """A fork server that did not start (the message says why)."""


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """How a fork server runs a bot: the arguments of `python -m cfarena.sdk` for each
    child, and the bundled bot modules (ours) the server imports up front."""

    args: tuple[str, ...]
    preload: tuple[str, ...] = ()


def arena_python(program: str) -> bool:
    """Whether `program` (as PATH finds it) is the interpreter the arena runs on, of the
    same installation: a fork server runs nothing but the arena's own code."""
    found = shutil.which(program)
    if found is None:
        return False
    mine = os.path.abspath(sys.executable)
    return os.path.realpath(found) == os.path.realpath(mine) and \
        os.path.dirname(os.path.abspath(found)) == os.path.dirname(mine)


def fork_plan(argv: Sequence[str]) -> ForkPlan | None:
    """A plan when `argv` is `python -m cfarena.sdk run TARGET ...` on the arena's own
    interpreter, else None: the bot is started as it is, a fresh interpreter each time."""
    if len(argv) < 5 or list(argv[1:4]) != _SDK_RUN or not arena_python(argv[0]):
        return None
    module = argv[4].split(":", 1)[0]
    ours = {bot.module for bot in BUNDLED.values()}
    return ForkPlan(tuple(argv[3:]), (module,) if module in ours else ())


@functools.cache
def cache_bytecode(module: str) -> None:
    """Write `module`'s .pyc here (if missing or stale), without running it.

    A sandbox shows the SDK and the bots read-only, so a fork server cannot cache
    what it compiles: a module that only fork servers import (the fork server's
    own, a bundled bot it preloads) would be compiled from source at every start.
    Nothing is written where Python writes no bytecode (PYTHONDONTWRITEBYTECODE);
    a module that cannot be compiled is left to the fork server to report."""
    if sys.dont_write_bytecode:
        return
    with contextlib.suppress(Exception):  # e.g. EOFError: a corrupt .pyc
        spec = importlib.util.find_spec(module)
        loader = spec.loader if spec is not None else None
        if isinstance(loader, importlib.machinery.SourceFileLoader):
            loader.get_code(module)  # reads a fresh .pyc, else compiles and writes one


@dataclass(eq=False)
class ForkedProcess(MatchProcess):
    """A bot process forked by a `ForkServer` for one match."""

    label: str
    server: ForkServer
    limits: SandboxLimits
    output: CapturedOutput = field(default_factory=CapturedOutput)
    breach: str | None = None
    stopped: bool = False  # killed by the referee while still running
    on_breach: Callable[[ForkedProcess, str], None] | None = None
    _exited: asyncio.Future[int] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    _reader: asyncio.Task[None] | None = None

    @property
    def returncode(self) -> int | None:
        return self._exited.result() if self._exited.done() else None

    def shown(self) -> Sequence[Path]:
        return self.server.binds

    async def wait(self) -> int | None:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        """Kill it: the whole sandbox goes (the fork server with it)."""
        if self.returncode is None:
            self.stopped = True
        self.server.kill()

    async def drained(self) -> None:
        """Wait (a few seconds at most) until all of its output has been read."""
        if self._reader is not None:
            await settle(asyncio.shield(self._reader), 5.0)

    def _ended(self, code: int) -> None:
        if not self._exited.done():
            self._exited.set_result(code)

    async def _read_output(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0))
        try:
            await self._keep_output(reader, limited=True)
        finally:
            transport.close()


@dataclass(eq=False)
class ForkServer:
    """A sandbox that holds one bot's runtime and forks its processes, one at a time."""

    bot: str
    label: str
    env: Mapping[str, str]
    watch: LimitWatch
    preload: tuple[str, ...] = ()  # bundled bot modules imported up front
    arena_socket: Path | None = None
    binds: Sequence[Path] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    workdir: Path | None = None
    # deals this sandbox's children played or could have heard of (see the module doc)
    tainted: set[int] = field(default_factory=set)
    child: ForkedProcess | None = None
    own_users: bool = False  # each child runs as a user of its own (see the module doc)
    sandbox: BotProcess | None = None
    _control: socket.socket | None = None
    _listener: asyncio.Task[None] | None = None
    _ready: asyncio.Future[None] | None = None
    _forks: int = 0

    @property
    def alive(self) -> bool:
        return self.sandbox is not None and self.sandbox.returncode is None \
            and self._listener is not None and not self._listener.done()

    @property
    def idle(self) -> bool:
        """Alive, and its last child (if any) has ended and been cleaned up after."""
        return self.alive and self.child is None

    async def start(self, timeout: float) -> None:
        """Start the sandbox and wait until the runtime is loaded (ForkServerError if not)."""
        for module in (MODULE, *self.preload):
            cache_bytecode(module)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        self._control = ours
        env = {**self.env, "CFARENA_FORK_FD": str(theirs.fileno())}
        self.sandbox = BotProcess(
            self.label,
            # isolated: nothing from the working directory, user site or PYTHON* variables
            [sys.executable, "-I", "-m", MODULE,
             *(arg for module in self.preload for arg in ("--preload", module))],
            env, socket=self.arena_socket,
            binds=self.binds, limits=self.limits, sandbox=True, workdir=self.workdir,
            pass_fds=(theirs.fileno(),), on_breach=self._on_breach, switch_users=True)
        try:
            await self.sandbox.start()
        finally:
            theirs.close()
        self._ready = asyncio.get_running_loop().create_future()
        # retrieved here, so that a failure nobody waits for any more is not logged
        self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._listener = asyncio.get_running_loop().create_task(self._listen())
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except (TimeoutError, ForkServerError) as exc:
            await self.stop()
            await asyncio.sleep(0.05)  # let the output reader catch the last words
            why = f"did not start within {timeout:g} s" if isinstance(exc, TimeoutError) \
                else self.sandbox.exit_summary()
            raise ForkServerError(f"fork server {why}") from None
        # bwrap's init and the fork server: the runtime, not charged to the bot
        self.sandbox.exempt_pids = self.watch.pids_of(self.sandbox)
        self.watch.count_from_now(self.sandbox)
        self.watch.watch(self.sandbox)

    async def fork(self, label: str, argv: Sequence[str], env: Mapping[str, str]
                   ) -> ForkedProcess:
        """A child running `python -m cfarena.sdk ARGV` with `env` (the server is idle)."""
        assert self.idle and self._control is not None and self.sandbox is not None
        child = ForkedProcess(label, self, self.limits)
        try:
            read_fd, write_fd = os.pipe()
        except OSError as exc:  # out of descriptors (EMFILE/ENFILE): no child, no crash
            child.output.add(f"[cfarena: not forked: {exc.strerror}]\n".encode())
            child._ended(-9)
            return child
        try:
            request = json.dumps({"argv": list(argv), "env": dict(env),
                                  "uid": random_uid(), "spare_uid": random_uid()}).encode()
            socket.send_fds(self._control, [request], [write_fd])
        except OSError:
            os.close(read_fd)
            child._ended(self.sandbox.returncode or -9)
            return child
        finally:
            os.close(write_fd)
        self.child = child
        self._forks += 1
        self.watch.count_from_now(self.sandbox)
        child._reader = asyncio.get_running_loop().create_task(child._read_output(read_fd))
        return child

    def kill(self) -> None:
        if self.sandbox is not None:
            self.sandbox.kill()

    async def stop(self) -> None:
        """Kill the sandbox (and a child in it) and wait until all of it is gone."""
        if self.sandbox is not None:
            self.watch.forget(self.sandbox)
            await self.sandbox.stop()
        if self._listener is not None:
            await settle(self._listener, 5.0)
        if self._control is not None:
            self._control.close()

    def _on_breach(self, _sandbox: BotProcess, reason: str) -> None:
        if self.child is not None:
            child = self.child
            if child.breach is None:
                child.breach = reason
                if child.on_breach is not None:
                    child.on_breach(child, reason)

    async def _listen(self) -> None:
        """Read the server's messages until the sandbox is gone."""
        assert self._control is not None and self.sandbox is not None
        loop = asyncio.get_running_loop()
        try:
            while data := await loop.sock_recv(self._control, 65536):
                message = json.loads(data)
                if "ready" in message and self._ready is not None and not self._ready.done():
                    self.own_users = bool(message.get("own_users"))
                    self._ready.set_result(None)
                elif "exited" in message and self.child is not None:
                    child, self.child = self.child, None
                    child._ended(int(message["exited"]))
        except (OSError, ValueError):
            pass
        finally:
            # the sandbox is gone (or speaks nonsense): it is of no further use
            self.sandbox.kill()
            code = await self.sandbox.wait()
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(ForkServerError("exited"))
            if self.child is not None:
                self.child._ended(code if code is not None else -9)
