"""Shared helpers for referee tests: a real referee on 127.0.0.1 and bot subprocesses."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.server.botproc import BotProcess
from cfarena.server.referee import RefereeServer, TokenRegistry

RAWBOT = str(Path(__file__).with_name("rawbot.py"))


def token_for(name: str) -> str:
    return f"token-of-{name}"


@dataclass
class Table:
    """A running referee plus the bot processes started for a test."""

    server: RefereeServer
    tmp: Path
    procs: list[BotProcess] = field(default_factory=list)

    def spawn(self, name: str, argv: Sequence[str]) -> BotProcess:
        proc = BotProcess(
            name,
            list(argv),
            env={"CFARENA_SERVER": self.server.address, "CFARENA_TOKEN": token_for(name)},
            log_path=self.tmp / f"{name}-{len(self.procs)}.log",
        )
        proc.start()
        self.procs.append(proc)
        return proc

    def raw(self, name: str, mode: str, *extra: str) -> BotProcess:
        """A rawbot subprocess (generated stubs only) in `mode`."""
        return self.spawn(
            name,
            [sys.executable, RAWBOT, mode, "--server", self.server.address,
             "--token", token_for(name), *extra],
        )

    def sdk(self, name: str, target: str, *extra: str) -> BotProcess:
        """A bot run by the SDK's runner (`python -m cfarena.sdk run TARGET`)."""
        return self.spawn(name, [sys.executable, "-m", "cfarena.sdk", "run", target, *extra])

    def output(self, proc: BotProcess) -> str:
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
