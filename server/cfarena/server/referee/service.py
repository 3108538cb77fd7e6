"""The gRPC face of the referee: the Arena service (proto <-> connection objects)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from google.protobuf.message import DecodeError

from cfarena.engine import PRESETS
from cfarena.match.record import FaultKind
from cfarena.server.credentials import hash_token
from cfarena.server.referee.connection import BotConnection, SeatFault
from cfarena.server.referee.tokens import PassRegistry, PassUsed, TokenRegistry
from cfarena.v1 import arena_pb2 as pb

log = logging.getLogger("cfarena.referee")

PROTOCOL = "cfarena.v1"
SERVER_VERSION = "cfarena 0.1.0"
MAX_CAPACITY = 64
MAX_VERSION_CHARS = 64  # Hello.version
MAX_HANDSHAKING = 256  # streams at once between opening and their Hello
# how the referee ends every bot stream when it shuts down: status OK with these
# details and this trailing metadata (see REFEREE.md, "Shutdown")
SHUTDOWN_DETAILS = "referee shutting down"
SHUTDOWN_METADATA = (("cfarena-close", "shutdown"),)


@dataclass(frozen=True, slots=True)
class Malformed:
    """A message whose bytes do not parse as a BotMessage."""

    data: bytes

    def describe(self) -> str:
        head = self.data[:32].hex()
        more = "..." if len(self.data) > 32 else ""
        return f"malformed message ({len(self.data)} bytes: {head}{more})"


@dataclass(frozen=True, slots=True)
class Oversized:
    """A message larger than the referee's limit (it is not parsed)."""

    size: int
    limit: int

    def describe(self) -> str:
        return f"message of {self.size} bytes over the {self.limit}-byte limit"


# gRPC's own receive limit, far above the referee's: a message between the two
# reaches the deserializer below and is named as oversized; beyond this one,
# gRPC refuses it before the referee sees anything
GRPC_RECEIVE_LIMIT = 8 * 1024 * 1024


def parse_bot_message(data: bytes, limit: int = GRPC_RECEIVE_LIMIT
                      ) -> pb.BotMessage | Malformed | Oversized:
    """Deserializer that never raises: bad bytes become a `Malformed` value, too many
    an `Oversized` one."""
    if len(data) > limit:
        return Oversized(len(data), limit)
    try:
        return pb.BotMessage.FromString(data)
    except (DecodeError, RuntimeError, ValueError):
        return Malformed(bytes(data))


Incoming = pb.BotMessage | Malformed | Oversized


class StreamHost(Protocol):
    """What the Arena service needs of the referee it serves (`RefereeServer`): the
    credentials a Hello is checked against, the limits, and where a connection is
    registered once it has said Hello."""

    @property
    def passes(self) -> PassRegistry: ...

    @property
    def tokens(self) -> TokenRegistry: ...

    @property
    def max_message_bytes(self) -> int: ...

    @property
    def hello_timeout_s(self) -> float: ...

    @property
    def max_connections_per_bot(self) -> int: ...

    def connection_count(self, bot_name: str) -> int: ...

    def register(self, conn: BotConnection) -> None: ...

    def unregister(self, conn: BotConnection) -> None: ...

    def seating_changed(self) -> None:
        """A connection answers again: it may be seated."""


class ArenaService:
    """Implements cfarena.v1.Arena for a referee (`StreamHost`)."""

    def __init__(self, server: StreamHost) -> None:
        self.server = server
        self._handshaking = 0
        self._closing = asyncio.Event()

    def close_streams(self) -> None:
        """Shutdown: end every bot stream past its handshake (and each one that gets
        there from now on) with status OK, `SHUTDOWN_DETAILS` and `SHUTDOWN_METADATA`."""
        self._closing.set()

    async def GetInfo(self, request: pb.GetInfoRequest, context: Any) -> pb.ServerInfo:
        return pb.ServerInfo(
            server_version=SERVER_VERSION,
            protocols=[PROTOCOL],
            presets=sorted(PRESETS),
            max_message_bytes=self.server.max_message_bytes,
        )

    async def Play(
        self, requests: AsyncIterator[Incoming], context: Any
    ) -> None:
        try:
            await self._play(requests, context)
        except asyncio.CancelledError:
            # the server is stopping (or the RPC was cancelled) at any point of
            # the conversation, the handshake included: end quietly
            return

    async def _play(
        self, requests: AsyncIterator[Incoming], context: Any
    ) -> None:
        # streams that have not said Hello yet hold memory and cannot be traced to any
        # bot: beyond a bound, a new one is refused at once
        if self._handshaking >= MAX_HANDSHAKING:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"too many connections waiting to say Hello (> {MAX_HANDSHAKING})")
        self._handshaking += 1
        try:
            hello = await self._read_hello(requests, context)
        finally:
            self._handshaking -= 1
        try:
            seat_pass = self.server.passes.redeem(hello.token)
        except PassUsed:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                "this one-time credential was already used")
            raise AssertionError("unreachable") from None
        name = seat_pass.bot_name if seat_pass else await self.server.tokens.resolve(hello.token)
        if name is None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown or missing token")
        assert name is not None
        if len(hello.version) > MAX_VERSION_CHARS or not hello.version.isprintable():
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Hello.version must be at most {MAX_VERSION_CHARS} printable characters",
            )
        # a process the arena started plays one match at a time
        capacity = 1 if seat_pass else (hello.capacity or 1)
        if capacity > MAX_CAPACITY:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Hello.capacity must be 1..{MAX_CAPACITY}, got {capacity}",
            )
        if not seat_pass and \
                self.server.connection_count(name) >= self.server.max_connections_per_bot:
            await context.abort(
                grpc.StatusCode.ALREADY_EXISTS,
                f"bot {name!r} already has {self.server.max_connections_per_bot} connections",
            )
        conn = BotConnection(name, capacity, context, client=hello.client, seat_pass=seat_pass,
                             version=hello.version,
                             token_hash="" if seat_pass else hash_token(hello.token))
        await context.write(
            pb.RefereeMessage(
                welcome=pb.Welcome(
                    bot_name=name, server_version=SERVER_VERSION, capacity=capacity
                )
            )
        )
        self.server.register(conn)
        log.info("bot %s connected (conn %d, capacity %d)", name, conn.conn_id, capacity)
        try:
            await self._until_shutdown(self._serve(conn, requests, context), context)
        except asyncio.CancelledError:
            conn.close(FaultKind.DISCONNECT, "stream cancelled")
            raise
        finally:
            # a message over gRPC's own limit (GRPC_RECEIVE_LIMIT) only ends our
            # request stream, exactly as a closed or reset stream does
            conn.close(FaultKind.DISCONNECT, "stream ended")
            self.server.unregister(conn)
            log.info("bot %s disconnected (conn %d)", name, conn.conn_id)

    async def _serve(self, conn: BotConnection, requests: AsyncIterator[Incoming],
                     context: Any) -> None:
        """Read the bot's Actions until its stream ends; a connection made with a
        one-time pass also ends, with status OK, once its match is over (`retire`),
        and one the referee kicks (`BotConnection.kick`) with the kick's status."""
        reader = asyncio.ensure_future(self._read_actions(conn, requests, context))
        stops = [asyncio.ensure_future(conn.wait_kicked())]
        if conn.seat_pass is not None:
            stops.append(asyncio.ensure_future(conn.wait_retired()))
        try:
            await asyncio.wait({reader, *stops}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, *stops):
                task.cancel()
            await asyncio.gather(reader, *stops, return_exceptions=True)
        if conn.kicked is not None:
            status, detail = conn.kicked
            await context.abort(status, detail)
        if reader.done() and not reader.cancelled() and reader.exception() is not None:
            raise reader.exception()  # type: ignore[misc]

    async def _until_shutdown(self, serving: Coroutine[Any, Any, None], context: Any) -> None:
        """Run `serving` until it ends, or until `close_streams`: then end the stream
        with the shutdown status (the bot need not reconnect to this referee)."""
        task = asyncio.ensure_future(serving)
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait({task, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not task.done():
                task.cancel()
            await asyncio.gather(task, closing, return_exceptions=True)
        if task.cancelled() and self._closing.is_set():
            context.set_trailing_metadata(SHUTDOWN_METADATA)
            context.set_details(SHUTDOWN_DETAILS)
            return
        await task  # it ended by itself: its result (or exception) as if awaited here

    async def _read_hello(
        self, requests: AsyncIterator[Incoming], context: Any
    ) -> pb.Hello:
        try:
            first = await asyncio.wait_for(anext(requests), self.server.hello_timeout_s)
        except StopAsyncIteration:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "stream ended before Hello")
            raise
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"no Hello within {self.server.hello_timeout_s:g} s",
            )
            raise
        if isinstance(first, Oversized):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"first message: {first.describe()}")
            raise AssertionError("unreachable")
        if isinstance(first, Malformed):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"first message: {first.describe()}"
            )
            raise AssertionError("unreachable")
        if first.WhichOneof("kind") != "hello":
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"first message must be a Hello, got {first.WhichOneof('kind') or 'nothing'}",
            )
        hello = first.hello
        if hello.protocol and hello.protocol != PROTOCOL:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol {hello.protocol!r} not supported (this referee speaks {PROTOCOL})",
            )
        return hello

    async def _read_actions(
        self,
        conn: BotConnection,
        requests: AsyncIterator[Incoming],
        context: Any,
    ) -> None:
        async for message in requests:
            if isinstance(message, Oversized):
                detail = message.describe()
                conn.close(FaultKind.PROTOCOL, detail)
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, detail)
            if isinstance(message, Malformed):
                detail = message.describe()
                conn.close(FaultKind.PROTOCOL, detail)
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, detail)
            assert isinstance(message, pb.BotMessage)
            kind = message.WhichOneof("kind")
            if kind == "action":
                overdue = bool(conn.overdue)
                notice = conn.on_action(message.action)
                if overdue and not conn.overdue:  # it answers again: it may be seated
                    self.server.seating_changed()
                if notice is not None:
                    log.info("bot %s: %s", conn.bot_name, notice)
                    notice_msg = pb.Notice(match_id=message.action.match_id, text=notice)
                    with contextlib.suppress(SeatFault):
                        await conn.send("", pb.RefereeMessage(notice=notice_msg))
                continue
            detail = f"unexpected {kind or 'empty'} message after the handshake"
            conn.close(FaultKind.PROTOCOL, detail)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, detail)


def method_handlers(service: ArenaService) -> grpc.GenericRpcHandler:  # type: ignore[type-arg]
    """The Arena service's handlers, with a deserializer that never raises."""
    def serialize(message: Any) -> bytes:
        # the match runner hands over Turns already serialized
        return message if isinstance(message, bytes) else bytes(message.SerializeToString())

    handlers = {
        "Play": grpc.stream_stream_rpc_method_handler(
            service.Play,
            request_deserializer=lambda data: parse_bot_message(
                data, service.server.max_message_bytes),
            response_serializer=serialize,
        ),
        "GetInfo": grpc.unary_unary_rpc_method_handler(
            service.GetInfo,
            request_deserializer=pb.GetInfoRequest.FromString,
            response_serializer=serialize,
        ),
    }
    return grpc.method_handlers_generic_handler("cfarena.v1.Arena", handlers)
