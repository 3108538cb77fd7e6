"""Shared helpers for referee tests: a real referee on 127.0.0.1 and bot subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.server.sandbox import pdeathsig_prefix

T = TypeVar("T")


# A long-lived bot subprocess as these tests start it (tournaments start sandboxed,
# one-match processes instead: cfarena.server.sandbox.BotProcess).
@dataclass
class RawBotProcess:
    """One running bot process (its own process group).

    Start it from the main thread: the parent-death signal fires when the
    *thread* that spawned the child exits.
    """

    name: str
    command: str | Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv: Sequence[str]
        if isinstance(self.command, str):
            argv = ["/bin/sh", "-c", "exec " + self.command]
        else:
            argv = list(self.command)
        argv = [*pdeathsig_prefix(), *argv]
        env = dict(os.environ)
        env.update(self.env)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out if self.log_path else subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            if self.log_path and not isinstance(out, int):
                out.close()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def poll(self) -> int | None:
        """The exit code if it has exited, else None."""
        return self.proc.poll() if self.proc else None

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM the process group, then SIGKILL it if it lingers."""
        proc = self.proc
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the group id is the child's pid
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        # the leader may be gone while others in its group live on
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)


RAWBOT = str(Path(__file__).with_name("rawbot.py"))


def token_for(name: str) -> str:
    return f"token-of-{name}"


@dataclass
class Table:
    """A running referee plus the bot processes started for a test."""

    server: RefereeServer
    tmp: Path
    procs: list[RawBotProcess] = field(default_factory=list)

    def spawn(self, name: str, argv: Sequence[str]) -> RawBotProcess:
        proc = RawBotProcess(
            name,
            list(argv),
            env={"CFARENA_SERVER": self.server.address, "CFARENA_TOKEN": token_for(name)},
            log_path=self.tmp / f"{name}-{len(self.procs)}.log",
        )
        proc.start()
        self.procs.append(proc)
        return proc

    def raw(self, name: str, mode: str, *extra: str) -> RawBotProcess:
        """A rawbot subprocess (generated stubs only) in `mode`."""
        return self.spawn(
            name,
            [sys.executable, RAWBOT, mode, "--server", self.server.address,
             "--token", token_for(name), *extra],
        )

    def sdk(self, name: str, target: str, *extra: str) -> RawBotProcess:
        """A bot run by the SDK's runner (`python -m cfarena.sdk run TARGET`)."""
        return self.spawn(name, [sys.executable, "-m", "cfarena.sdk", "run", target, *extra])

    def output(self, proc: RawBotProcess) -> str:
        assert proc.log_path is not None
        return proc.log_path.read_text() if proc.log_path.exists() else ""


@contextlib.asynccontextmanager
async def table(tmp: Path, names: Sequence[str], **kwargs: object) -> AsyncIterator[Table]:
    tokens = TokenRegistry()
    for name in names:
        tokens.add(name, token_for(name))
    server = RefereeServer(tokens, **kwargs)  # type: ignore[arg-type]
    await server.start()
    tmp.mkdir(parents=True, exist_ok=True)
    t = Table(server, tmp)
    try:
        yield t
    finally:
        for proc in t.procs:
            proc.stop()
        await server.stop(grace=1.0)
    # every bot process this test started is gone (stopped by its process group)
    assert all(proc.poll() is not None for proc in t.procs)


@dataclass
class HeldTable:
    """A `table` held open across tests (a module fixture's): its referee and bot
    processes live on the loop of `runner`, which `run` drives from the main thread (the
    thread that starts the bots: see RawBotProcess)."""

    table: Table
    runner: asyncio.Runner

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)


@contextlib.contextmanager
def held_table(tmp: Path, names: Sequence[str], **kwargs: object) -> Iterator[HeldTable]:
    """`table` on an event loop of its own, open until the block ends."""
    with asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()
        held = HeldTable(runner.run(stack.enter_async_context(table(tmp, names, **kwargs))),
                         runner)
        try:
            yield held
        finally:
            runner.run(stack.aclose())
