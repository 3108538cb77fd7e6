"""The connection to a referee: `BotClient` (asyncio) and `run_bot` (blocking).

One client holds one Arena.Play stream: Hello -> Welcome, then MatchStart /
Turn / MatchEnd / Notice messages for up to `capacity` matches at once, each
Turn answered by an Action. Messages of one match are handled in order by a
per-match worker task; `Bot.choose` runs directly on the event loop when
capacity == 1 and in a thread pool of `capacity` threads otherwise, so a slow
decision in one match does not hold up the others. A decision that comes after
its deadline is still sent: the referee ignores it (with a Notice), but seats the
bot in no new match, and ends no one-match stream, until it has come, so that a
stall costs the match it happened in and nothing after it.

Reconnection: on UNAVAILABLE or any other transient failure (including a lost
connection) the client reconnects after 0.2 s, 0.4 s, ... doubling up to 5 s,
each with random jitter (the delay is drawn from [d/2, d]); the count restarts
after every successful Welcome. It gives up with `BotConnectionError` after
`max_retries` consecutive failed attempts (None = never), at once when
`reconnect=False`, and at once on UNAUTHENTICATED, PERMISSION_DENIED,
INVALID_ARGUMENT, FAILED_PRECONDITION, UNIMPLEMENTED or RESOURCE_EXHAUSTED
(retrying cannot help). A stream the referee ends with status OK makes `run()`
return, unless `reconnect_on_close=True`. So does a referee that shuts down: it
ends every stream with status OK and the trailing metadata `cfarena-close:
shutdown` (details "referee shutting down"); with `max_retries=None` (retry
forever) the client instead keeps reconnecting, with the same back-off, until
a referee is back. Matches running when a connection is lost are lost (the
referee faults them as disconnects).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import grpc.aio

from cfarena.engine.events import Event
from cfarena.sdk.bot import Bot, decide
from cfarena.sdk.convert import (
    events_from_proto,
    match_end_from_proto,
    match_start_from_proto,
    turn_from_proto,
)
from cfarena.sdk.types import MatchInfo, ProtocolError, Turn
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub

PROTOCOL = "cfarena.v1"
SDK_VERSION = "0.1.0"
# the trailing metadata (and details) of a stream ended because the referee shuts down
SHUTDOWN_METADATA = ("cfarena-close", "shutdown")
SHUTDOWN_DETAILS = "referee shutting down"

log = logging.getLogger("cfarena.sdk")

# Keepalive: ping the referee every 10 s, give up on the connection if a ping is not
# acknowledged in 5 s (a referee that vanished without closing is noticed, and the
# client reconnects). The referee accepts pings every 5 s or slower
# (docs/OPERATIONS.md); pinging faster would earn a GOAWAY "too_many_pings".
KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.http2.ping_timeout_ms", 5_000),  # what bounds the wait for the ack (1.85)
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)

CONNECT_ATTEMPT_MS = 20_000  # gRPC's own default

FATAL_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)

_T = TypeVar("_T")
_EOF: object = grpc.aio.EOF  # type: ignore[attr-defined]  # missing from grpc-stubs


class BotConnectionError(Exception):
    """The client cannot (or may no longer) talk to the referee; the message says why."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Match:
    match_id: str
    info: MatchInfo | None
    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    history: tuple[Event, ...] = ()
    latest_turn: int = -1
    task: asyncio.Task[None] | None = None


MAX_VERSION_CHARS = 64  # the longest Hello.version a referee accepts


class BotClient:
    """Plays `bot` on a referee until the referee closes the stream (or forever, see below).

    `server` is "host:port"; `token` the bot's secret; `capacity` how many
    matches it plays at once (1-64). `client_name` is free text for the
    referee's logs. `version` (default: `bot.version`) is the bot's version for the
    arena's ratings (at most 64 characters). `credentials` switches to a TLS channel. See the module
    docstring for `reconnect`, `max_retries` and `reconnect_on_close`.
    Cancel the task running `run()` to stop.
    """

    def __init__(
        self,
        bot: Bot,
        server: str = "127.0.0.1:50051",
        token: str = "",
        *,
        capacity: int = 1,
        client_name: str | None = None,
        version: str | None = None,
        reconnect: bool = True,
        max_retries: int | None = 10,
        reconnect_on_close: bool = False,
        backoff_initial: float = 0.2,
        backoff_max: float = 5.0,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        if not (1 <= capacity <= 64):
            raise ValueError(f"capacity must be 1-64, got {capacity}")
        self.bot = bot
        self.server = server
        self.token = token
        self.capacity = capacity
        self.client_name = client_name or (
            f"{type(bot).__name__} (cfarena python sdk {SDK_VERSION})"
        )
        self.version = getattr(bot, "version", "") if version is None else version
        if not isinstance(self.version, str) or len(self.version) > MAX_VERSION_CHARS:
            raise ValueError(f"version must be a string of at most {MAX_VERSION_CHARS} "
                             f"characters, got {self.version!r}")
        self.reconnect = reconnect
        self.max_retries = max_retries
        self.reconnect_on_close = reconnect_on_close
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.credentials = credentials
        self.channel_options: list[tuple[str, Any]] = [
            # a fresh subchannel per connection attempt, so gRPC's own connect
            # backoff (up to 120 s by default) never outlasts ours
            ("grpc.use_local_subchannel_pool", 1),
            ("grpc.initial_reconnect_backoff_ms", int(backoff_initial * 1000)),
            # despite its name, gRPC's least time for one connection attempt (to the
            # referee's first SETTINGS frame): a busy or briefly frozen referee is
            # waited for, not given up on after a fraction of a second (an address
            # that drops packets costs this much per attempt; a refused one, nothing)
            ("grpc.min_reconnect_backoff_ms", CONNECT_ATTEMPT_MS),
            ("grpc.max_reconnect_backoff_ms", int(backoff_max * 1000)),
            *KEEPALIVE_OPTIONS,
            *channel_options,
        ]
        self.welcome: pb.Welcome | None = None  # the last Welcome received
        self.connections = 0  # Welcomes received so far
        self._executor: ThreadPoolExecutor | None = None
        self._matches: dict[str, _Match] = {}
        self._call: Any = None
        self._write_lock = asyncio.Lock()
        self._closed = True
        self._background: set[asyncio.Task[None]] = set()
        self._workers: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ running
    async def run(self) -> None:
        """Connect and play; returns when the referee ends the stream with OK (also
        when it shuts down, unless `max_retries` is None: then it waits for it).

        Raises `BotConnectionError` on a fatal status or when retries run out.
        """
        if self.capacity > 1:
            self._executor = ThreadPoolExecutor(self.capacity, thread_name_prefix="cfarena-bot")
        failures = 0
        try:
            while True:
                welcomed_before = self.connections
                try:
                    shutdown = await self._session()
                    if shutdown and self.reconnect and self.max_retries is None:
                        reason = "the referee is shutting down"  # wait for it to be back
                    elif not self.reconnect_on_close:
                        log.info("the referee %s; stopping",
                                 "is shutting down" if shutdown else "closed the stream")
                        return
                    else:
                        reason = "the referee closed the stream"
                except grpc.aio.AioRpcError as err:
                    code = err.code()
                    details = err.details() or ""
                    if code in FATAL_CODES:
                        raise BotConnectionError(
                            f"{self.server} refused the bot: {code.name}: {details}", code
                        ) from None
                    reason = f"{code.name}: {details}"
                if self.connections > welcomed_before:
                    failures = 0
                failures += 1
                if not self.reconnect or (
                    self.max_retries is not None and failures > self.max_retries
                ):
                    raise BotConnectionError(
                        f"cannot connect to {self.server}: {reason} "
                        f"(gave up after {failures} failed attempt{'s' if failures > 1 else ''})"
                    )
                delay = self.backoff_delay(failures)
                log.warning("connection to %s: %s; retrying in %.2f s", self.server, reason, delay)
                await asyncio.sleep(delay)
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None

    def backoff_delay(self, failures: int) -> float:
        """Delay before attempt `failures + 1`: 0.2 s doubling to 5 s, jittered to [d/2, d]."""
        ceiling = min(self.backoff_max, self.backoff_initial * 2.0 ** (failures - 1))
        return ceiling * random.uniform(0.5, 1.0)

    def _channel(self) -> grpc.aio.Channel:
        if self.credentials is not None:
            return grpc.aio.secure_channel(self.server, self.credentials, self.channel_options)
        return grpc.aio.insecure_channel(self.server, self.channel_options)

    async def _session(self) -> bool:
        """One connection: returns when the stream ends with OK (True if the referee
        said it is shutting down); AioRpcError otherwise."""
        async with self._channel() as channel:
            call = ArenaStub(channel).Play()
            self._call = call
            self._closed = False
            try:
                hello = pb.Hello(
                    token=self.token,
                    protocol=PROTOCOL,
                    capacity=self.capacity,
                    client=self.client_name,
                    version=self.version,
                )
                await call.write(pb.BotMessage(hello=hello))
                first = await call.read()
                if first is _EOF:
                    await self._raise_status(call)
                    raise BotConnectionError(f"{self.server} closed the stream without a Welcome")
                if first.WhichOneof("kind") != "welcome":
                    call.cancel()
                    raise BotConnectionError(
                        f"{self.server} answered Hello with {first.WhichOneof('kind')!r}, "
                        "not a Welcome: is it a cfarena.v1 referee?"
                    )
                self.welcome = first.welcome
                self.connections += 1
                log.info(
                    "connected to %s as %r (referee %s, capacity %d)",
                    self.server,
                    first.welcome.bot_name,
                    first.welcome.server_version,
                    first.welcome.capacity,
                )
                while True:
                    msg = await call.read()
                    if msg is _EOF:
                        break
                    self._dispatch(msg, time.monotonic())
                await self._raise_status(call)
                return await self._shutting_down(call)
            finally:
                self._closed = True
                await self._stop_workers(cancel=not self._call_ok(call))
                self._call = None
                call.cancel()

    @staticmethod
    def _call_ok(call: Any) -> bool:
        return bool(call.done()) and not call.cancelled()

    @staticmethod
    async def _shutting_down(call: Any) -> bool:
        """Whether a stream that ended with OK was ended by a referee shutting down."""
        trailing = await call.trailing_metadata()
        marked = any((key, value) == SHUTDOWN_METADATA for key, value in trailing or ())
        return marked or await call.details() == SHUTDOWN_DETAILS

    @staticmethod
    async def _raise_status(call: Any) -> None:
        code = await call.code()
        if code != grpc.StatusCode.OK:
            raise grpc.aio.AioRpcError(
                code, grpc.aio.Metadata(), grpc.aio.Metadata(), await call.details(), None
            )

    async def _stop_workers(self, *, cancel: bool) -> None:
        """After the stream ended: let workers finish queued hooks (or cancel them)."""
        matches = list(self._matches.values())
        self._matches.clear()
        tasks = list(self._workers)  # ended matches' workers may still run their last hooks
        for m in matches:
            m.queue.put_nowait(("close", None))
        if cancel:
            for task in tasks:
                task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ----------------------------------------------------------------- dispatch
    def _dispatch(self, msg: pb.RefereeMessage, received_at: float) -> None:
        kind = msg.WhichOneof("kind")
        if kind == "turn":
            self._on_turn(msg.turn, received_at)
        elif kind == "match_start":
            self._on_match_start(msg.match_start)
        elif kind == "match_end":
            self._on_match_end(msg.match_end)
        elif kind == "notice":
            where = f" (match {msg.notice.match_id})" if msg.notice.match_id else ""
            log.warning("referee notice%s: %s", where, msg.notice.text)
        else:
            log.warning("unexpected referee message %r ignored", kind)

    def _on_match_start(self, msg: pb.MatchStart) -> None:
        try:
            info: MatchInfo | None = match_start_from_proto(msg)
        except ProtocolError as err:
            log.error("bad MatchStart for %r: %s", msg.match_id, err)
            info = None
        if msg.match_id in self._matches:
            log.error("MatchStart for %r, which is already running; ignored", msg.match_id)
            return
        match = _Match(msg.match_id, info)
        self._matches[msg.match_id] = match
        if info is not None:
            log.info("match %s: seat %d of %s", info.match_id, info.seat, list(info.seat_names))
            match.queue.put_nowait(("start", info))
        match.task = asyncio.get_running_loop().create_task(self._worker(match))
        self._workers.add(match.task)
        match.task.add_done_callback(self._workers.discard)

    def _on_turn(self, msg: pb.Turn, received_at: float) -> None:
        match = self._matches.get(msg.match_id)
        if match is None or match.info is None:
            log.error("Turn %d for unknown match %r; answering move 0", msg.turn_id, msg.match_id)
            self._spawn(self._send_action(msg.match_id, msg.turn_id, 0))
            return
        if msg.events and msg.events[0].index != len(match.history):
            log.warning(
                "match %s: events jump from #%d to #%d",
                msg.match_id,
                len(match.history),
                msg.events[0].index,
            )
        try:
            turn = turn_from_proto(
                msg, match.info.rules, history=match.history, received_at=received_at
            )
        except ProtocolError as err:
            log.error("match %s: bad Turn %d (%s); answering move 0", msg.match_id, msg.turn_id,
                      err)
            self._spawn(self._send_action(msg.match_id, msg.turn_id, 0))
            return
        if turn.observation.seat != match.info.seat:
            # a referee bug that shows this bot another seat's hand: the bot must not see
            # it (nor decide on it), and the referee's operator must hear of it
            log.error(
                "match %s: Turn %d carries the observation of seat %d, but this bot sits in "
                "seat %d (the referee sent another seat's view; report it to the arena's "
                "operator); the bot is not asked, answering move 0",
                msg.match_id, msg.turn_id, turn.observation.seat, match.info.seat,
            )
            self._spawn(self._send_action(msg.match_id, msg.turn_id, 0))
            return
        match.history = turn.history
        match.latest_turn = turn.turn_id
        match.queue.put_nowait(("turn", turn))

    def _on_match_end(self, msg: pb.MatchEnd) -> None:
        match = self._matches.pop(msg.match_id, None)
        if match is None:
            log.warning("MatchEnd for unknown match %r ignored", msg.match_id)
            return
        try:
            events = events_from_proto(msg.events)
            result = match_end_from_proto(msg, match.info.seat if match.info else None)
        except ProtocolError as err:
            log.error("match %s: bad MatchEnd (%s)", msg.match_id, err)
            match.queue.put_nowait(("close", None))
            return
        log.info("match %s over (%s): ranks %s", msg.match_id, result.reason, list(result.ranks))
        match.queue.put_nowait(("end", (events, result)))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ workers
    async def _worker(self, match: _Match) -> None:
        bot = self.bot
        while True:
            what, item = await match.queue.get()
            if what == "start":
                await self._hook(bot.on_match_start, item)
            elif what == "turn":
                turn: Turn = item
                if turn.events:
                    await self._hook(bot.on_events, turn.match_id, turn.events)
                if self._closed:
                    continue
                if turn.turn_id != match.latest_turn:
                    log.warning(
                        "match %s: turn %d superseded; skipped", turn.match_id, turn.turn_id
                    )
                    continue
                index = await self._decide(turn)
                if turn.turn_id != match.latest_turn or self._closed:
                    log.warning("match %s: turn %d answered too late", turn.match_id, turn.turn_id)
                    continue
                await self._send_action(turn.match_id, turn.turn_id, index)
            elif what == "end":
                events, result = item
                if events:
                    await self._hook(bot.on_events, result.match_id, events)
                await self._hook(bot.on_match_end, result)
                return
            else:  # close
                return

    async def _call_bot(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._executor is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _hook(self, fn: Callable[..., object], *args: Any) -> None:
        try:
            await self._call_bot(fn, *args)
        except Exception:
            log.exception("bot hook %s raised", getattr(fn, "__name__", fn))

    async def _decide(self, turn: Turn) -> int:
        """The bot's move index, or 0 (the first offered move) if choose fails."""
        index = await self._call_bot(decide, self.bot, turn)
        left = turn.time_left()
        if left < 0:
            log.warning(
                "match %s turn %d: decided %.0f ms after the deadline",
                turn.match_id,
                turn.turn_id,
                -left * 1000,
            )
        return index

    async def _send_action(self, match_id: str, turn_id: int, index: int) -> None:
        call = self._call
        if call is None or self._closed:
            return
        action = pb.Action(match_id=match_id, turn_id=turn_id, move_index=index)
        try:
            async with self._write_lock:
                await call.write(pb.BotMessage(action=action))
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError) as err:
            log.debug("could not send action for %s/%d: %r", match_id, turn_id, err)


def run_bot(
    bot: Bot,
    server: str = "127.0.0.1:50051",
    token: str = "",
    capacity: int = 1,
    **options: Any,
) -> None:
    """Blocking `BotClient(bot, server, token, capacity=capacity, **options).run()`."""
    asyncio.run(BotClient(bot, server, token, capacity=capacity, **options).run())


__all__ = ["FATAL_CODES", "KEEPALIVE_OPTIONS", "PROTOCOL", "BotClient", "BotConnectionError",
           "run_bot"]
