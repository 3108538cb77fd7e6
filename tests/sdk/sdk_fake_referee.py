"""A scripted referee: a real grpc.aio server on 127.0.0.1; its Play handler is a test coroutine."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaServicer, add_ArenaServicer_to_server

Script = Callable[["Session"], Awaitable[None]]


class Session:
    """One Play stream as the script sees it."""

    def __init__(self, context: Any) -> None:
        self.context = context

    async def read(self, timeout: float = 10.0) -> pb.BotMessage:
        msg = await asyncio.wait_for(self.context.read(), timeout)
        if msg is grpc.aio.EOF:  # type: ignore[attr-defined]
            raise AssertionError("the bot closed its stream")
        assert isinstance(msg, pb.BotMessage)
        return msg

    async def hello(self) -> pb.Hello:
        msg = await self.read()
        assert msg.WhichOneof("kind") == "hello", msg
        return msg.hello

    async def action(self) -> pb.Action:
        msg = await self.read()
        assert msg.WhichOneof("kind") == "action", msg
        return msg.action

    async def send(self, *msgs: pb.RefereeMessage) -> None:
        for msg in msgs:
            await self.context.write(msg)

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        await self.context.abort(code, details)


class _Servicer(ArenaServicer):  # type: ignore[misc]  # generated code is untyped
    def __init__(self, referee: FakeReferee) -> None:
        self.referee = referee

    async def Play(self, request_iterator: Any, context: Any) -> None:
        self.referee.sessions += 1
        session = Session(context)
        try:
            await self.referee.script(session)
        except Exception as err:
            self.referee.errors.append(err)
            raise


class FakeReferee:
    """Serves `script` for every Play stream; `errors` collects assertion failures in it."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.sessions = 0
        self.errors: list[BaseException] = []
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self, port: int = 0) -> int:
        server = grpc.aio.server()
        add_ArenaServicer_to_server(_Servicer(self), server)
        self.port = server.add_insecure_port(f"127.0.0.1:{port}")
        assert self.port, f"could not bind 127.0.0.1:{port}"
        await server.start()
        self.server = server
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)
            self.server = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def check(self) -> None:
        if self.errors:
            raise self.errors[0]
