"""A fork server asked for a child when the referee has no descriptor left (EMFILE)
hands back a child that has already ended, saying why, instead of raising: the pool
counts it as a process that did not start, and the run goes on."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from cfarena.server.sandbox import LimitWatch
from cfarena.server.tournament.forks import ForkServer


def test_fork_without_descriptors_is_an_ended_child(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fork() -> tuple[int | None, str]:
        server = ForkServer("evil", "evil#fork1", {}, LimitWatch())
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener = asyncio.get_running_loop().create_future()
        # an idle fork server: its sandbox alive, its listener running
        server.sandbox = SimpleNamespace(returncode=None)  # type: ignore[assignment]
        server._control, server._listener = ours, listener  # type: ignore[assignment]

        def no_descriptors() -> Any:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

        monkeypatch.setattr(os, "pipe", no_descriptors)
        try:
            child = await server.fork("evil#1", ["run", "bot.py"], {})
            return await asyncio.wait_for(child.wait(), 1), child.output.text()
        finally:
            listener.cancel()
            ours.close()
            theirs.close()

    code, output = asyncio.run(fork())
    assert code == -9
    assert "not forked: Too many open files" in output
