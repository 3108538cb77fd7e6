"""The referee server: accepts bot streams, seats them in matches, runs matches."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from cfarena.engine import Rules
from cfarena.engine.state import MatchState
from cfarena.match.abort_reason import AbortReason
from cfarena.match.record import MatchRecord, TimeControl
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.gate import GateLimits, SocketGate
from cfarena.server.referee.lag import LoopLag
from cfarena.server.referee.match_runner import MatchRunner
from cfarena.server.referee.observer import MatchWatcher, RefereeObserver
from cfarena.server.referee.seats import Seats
from cfarena.server.referee.service import GRPC_RECEIVE_LIMIT, ArenaService, method_handlers
from cfarena.server.referee.tokens import PassRegistry, SeatPass, TokenRegistry
from cfarena.server.referee.transport import DEFAULT_KEEPALIVE, Keepalive, ServerTls

log = logging.getLogger("cfarena.referee")

ARENA_SERVICE = "cfarena.v1.Arena"


class SeatingTimeout(Exception):
    """The bots a match needs did not connect (or free up) in time."""


class ShuttingDown(Exception):
    """The referee is stopping and starts no new match."""


class RefereeServer:
    """A grpc.aio referee. Start it, let bots connect, then `run_match(...)`."""

    def __init__(
        self,
        tokens: TokenRegistry,
        *,
        host: str = "127.0.0.1",
        port: int | None = 0,
        max_message_bytes: int = 64 * 1024,
        hello_timeout_s: float = 10.0,
        max_connections_per_bot: int = 16,
        unix_socket: Path | None = None,
        gate: GateLimits | bool = True,
        keepalive: Keepalive = DEFAULT_KEEPALIVE,
        tls: ServerTls | None = None,
        observer: RefereeObserver | None = None,
        watcher: MatchWatcher | None = None,
    ) -> None:
        self.tokens = tokens
        # one-time credentials of the bot processes the arena itself starts
        self.passes = PassRegistry()
        # also (or only, with port=None) listen on this Unix socket: the way
        # sandboxed bots, which have no network, reach the referee
        self.unix_socket = unix_socket
        # what one sandbox may hold open on that socket (referee/gate.py); False: the
        # socket is gRPC's own, ungated (benchmarks compare the two)
        self.gate_limits = (GateLimits(first_stream_s=hello_timeout_s) if gate is True
                            else gate or None)
        self.gate: SocketGate | None = None
        self._grpc_dir: Path | None = None
        # told (namespace, reason) of a sandbox the gate found over its limit: the
        # pools that started sandboxes stop the one with that PID namespace
        self.sandbox_faults: list[Callable[[str, str], None]] = []
        self.host = host
        self.port = port
        self.max_message_bytes = max_message_bytes
        self.hello_timeout_s = hello_timeout_s
        self.max_connections_per_bot = max_connections_per_bot
        self.keepalive = keepalive
        # TLS on HOST:PORT (the Unix socket, local to the machine, stays plaintext)
        self.tls = tls
        # told of connections, matches, decisions and faults (metrics); None: nobody
        self.observer = observer
        # told of each match's state as it is played (the live web view); None: nobody
        self.watcher = watcher
        # grpc.health.v1: SERVING from start() until stop() begins, then NOT_SERVING
        self.health = health.aio.HealthServicer()  # type: ignore[attr-defined]  # grpc-stubs
        self._connections: dict[str, list[BotConnection]] = {}
        # the dial-in connections as seats (free, capacity, reserving), for the arena
        # and `seat`
        self.seats = Seats(self.connections)
        self._changed: asyncio.Condition | None = None
        self._server: grpc.aio.Server | None = None
        self._matches: set[asyncio.Task[MatchRecord]] = set()
        self._accepting = True
        # the stalls of this referee's own loop: never charged to a bot (referee/lag.py)
        self.lag = LoopLag()
        # test hook: installed on every new connection
        self.on_send: Callable[[str, str, int, bytes], None] | None = None

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> int:
        """Bind and serve; returns the port (useful with port=0)."""
        self._changed = asyncio.Condition()
        self.lag.start()
        server = grpc.aio.server(
            options=[
                # the referee's own limit is checked as messages are parsed, so
                # that an oversized one is named as such (service.Oversized)
                ("grpc.max_receive_message_length",
                 max(GRPC_RECEIVE_LIMIT, self.max_message_bytes)),
                ("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0),
                # streams one client connection may hold open (a bot needs one per
                # Play connection it makes, at most max_connections_per_bot)
                ("grpc.max_concurrent_streams", 2 * self.max_connections_per_bot),
                *self.keepalive.server_options(),
            ]
        )
        self._service = ArenaService(self)
        server.add_generic_rpc_handlers((method_handlers(self._service),))
        # standard services: health checking, and reflection (grpcurl lists and calls
        # the services without the .proto files)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (ARENA_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
        if self.port is not None:
            address = f"{self.host}:{self.port}"
            try:
                if self.tls is not None:
                    self.port = server.add_secure_port(address, self.tls.credentials())
                else:
                    self.port = server.add_insecure_port(address)
            except RuntimeError:  # grpc raises (after logging why) on a port it cannot bind
                self.port = 0
            if self.port == 0:
                raise OSError(f"cannot listen on {address}")
        if self.unix_socket is not None:
            grpc_socket = self.unix_socket
            if self.gate_limits is not None:  # gRPC listens privately, behind the gate
                self._grpc_dir = Path(tempfile.mkdtemp(prefix="cfarena-grpc-"))  # 0700
                grpc_socket = self._grpc_dir / "grpc.sock"
            with contextlib.suppress(FileNotFoundError):
                grpc_socket.unlink()
            if not server.add_insecure_port(f"unix:{grpc_socket}"):
                raise OSError(f"cannot listen on {grpc_socket}")
        await server.start()
        if self.unix_socket is not None and self.gate_limits is not None:
            self.gate = SocketGate(self.unix_socket, grpc_socket, self.gate_limits,
                                   on_excess=self._sandbox_over_limit)
            await self.gate.start()
        if self.unix_socket is not None:
            # a sandboxed bot runs under its own uid; the socket's directory is
            # the referee's alone, so only what a sandbox is given reaches it
            os.chmod(self.unix_socket, 0o666)
        self._server = server
        for service in ("", ARENA_SERVICE):  # "": the server as a whole
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        log.info("referee listening on %s", self.address)
        return self.port or 0

    @property
    def address(self) -> str:
        """Where bots connect: HOST:PORT, or unix:PATH for a socket-only referee."""
        if self.port is None:
            return f"unix:{self.unix_socket}"
        return f"{self.host}:{self.port}"

    async def stop(self, grace: float = 5.0) -> None:
        """Graceful shutdown: no new matches; running ones get `grace` seconds to
        finish, then are cancelled (recorded as aborted by their runners); then every
        bot stream is ended with the shutdown status, and the server stops."""
        self._accepting = False
        if self._server is not None:  # health checks see it going at once
            await self.health.enter_graceful_shutdown()
        if self._matches:
            _done, pending = await asyncio.wait(set(self._matches), timeout=grace)
            deciding = any(conn.pending for conn in self.connections())
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            if pending and deciding:
                # a bot deciding a Turn of a match just cut off answers it soon: let the
                # answer in before its stream ends (a client write racing the end of its
                # stream makes the status it sees INTERNAL, which it would retry)
                await asyncio.sleep(1.0)
        if self._server is not None:
            # tell every bot, so that it need not retry: its stream ends with status
            # OK, "referee shutting down" (service.SHUTDOWN_DETAILS / _METADATA)
            self._service.close_streams()
            await self._server.stop(grace=1.0)
            self._server = None
        if self.gate is not None:
            log.info("referee gate: at most %d connections of one sandbox at once; closed %s",
                     self.gate.peak_per_sandbox,
                     {why: n for why, n in self.gate.refused.items() if n} or "none")
            await self.gate.close()
            self.gate = None
        if self._grpc_dir is not None:
            shutil.rmtree(self._grpc_dir, ignore_errors=True)
            self._grpc_dir = None
        self.lag.stop()
        if self.lag.longest_s:
            log.info("referee loop: longest stall %.2f s (not charged to any bot)",
                     self.lag.longest_s)

    # ---------------------------------------------------------- connections
    def _sandbox_over_limit(self, namespace: str, reason: str) -> None:
        log.warning("a sandbox went over its limit on the referee's socket: %s", reason)
        for listener in list(self.sandbox_faults):
            listener(namespace, reason)

    def register_hook(self, conn: BotConnection) -> None:
        """Install the current `on_send` test hook on a connection."""
        hook = self.on_send
        if hook is None:
            conn.on_send = None
            return
        name = conn.bot_name
        conn.on_send = lambda match_id, seat, data: hook(name, match_id, seat, data)

    def register(self, conn: BotConnection) -> None:
        self.register_hook(conn)
        self._connections.setdefault(conn.bot_name, []).append(conn)
        if conn.seat_pass is not None:
            conn.seat_pass.connection = conn
        if self.observer is not None:
            self.observer.connected(conn.bot_name)
        self._notify()

    def unregister(self, conn: BotConnection) -> None:
        conns = self._connections.get(conn.bot_name, [])
        if conn in conns:
            conns.remove(conn)
            if self.observer is not None:
                self.observer.disconnected(conn.bot_name)
        self._notify()

    def connections(self) -> list[BotConnection]:
        """Every live connection."""
        return [c for conns in self._connections.values() for c in conns]

    def connection_count(self, bot_name: str) -> int:
        return len(self._connections.get(bot_name, []))

    def seating_changed(self) -> None:
        """A connection may be seated again (it answers again): `seat` looks again."""
        self._notify()

    def _notify(self) -> None:
        changed = self._changed
        if changed is None:
            return

        async def _wake() -> None:
            async with changed:
                changed.notify_all()

        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(_wake())

    async def wait_for_bots(self, names: Sequence[str], timeout: float) -> None:
        """Wait until every named bot has at least one live connection."""
        assert self._changed is not None
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: all(self.connection_count(n) for n in names)),
                timeout,
            )

    async def wait_for_pass(self, seat_pass: SeatPass, timeout: float) -> BotConnection:
        """The connection made with a one-time pass, once its process has connected."""
        assert self._changed is not None

        def connected() -> bool:
            conn = seat_pass.connection
            return isinstance(conn, BotConnection) and not conn.closed

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(connected), timeout)
        assert isinstance(seat_pass.connection, BotConnection)
        return seat_pass.connection

    async def seat(
        self, match_id: str, seat_bots: Sequence[str], timeout: float
    ) -> list[BotConnection]:
        """Wait (up to `timeout` s) for free connections for every seat and reserve them."""
        assert self._changed is not None
        result: list[BotConnection] | None = None

        def ready() -> bool:
            nonlocal result
            result = self.seats.take(match_id, [(bot, None) for bot in seat_bots])
            return result is not None

        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(ready), timeout)
        except TimeoutError:
            missing = sorted(
                {b for b in seat_bots if not any(c.free for c in self._connections.get(b, []))}
            )
            raise SeatingTimeout(
                f"match {match_id}: no free connection within {timeout:g} s for {missing}"
            ) from None
        assert result is not None
        return result

    # -------------------------------------------------------------- matches
    async def run_match(
        self,
        match_id: str,
        rules: Rules,
        seed: int,
        seat_bots: Sequence[str],
        time_control: TimeControl | None = None,
        *,
        seat_timeout: float = 30.0,
        tournament_id: int | None = None,
        key: str | None = None,
        on_record: Callable[[MatchRecord], None] | None = None,
        initial_state: MatchState | None = None,
        connections: Sequence[BotConnection] | None = None,
    ) -> MatchRecord:
        """Seat the bots, play the match, return its record.

        `on_record` is called with the final record exactly once, also when the
        match is aborted by shutdown (before the cancellation propagates), so a
        caller can store it.
        """
        if not self._accepting:
            raise ShuttingDown("the referee is shutting down")
        rules.resolve(len(seat_bots))  # RulesError before anyone is seated
        if connections is None:
            conns = await self.seat(match_id, seat_bots, seat_timeout)
        else:  # the caller chose the connections (one process per seat)
            conns = list(connections)
            for seat, conn in enumerate(conns):
                conn.matches[match_id] = seat
        runner = MatchRunner(
            match_id,
            rules,
            seed,
            conns,
            seat_bots,
            time_control or TimeControl(),
            tournament_id=tournament_id,
            key=key,
            initial_state=initial_state,
            watcher=self.watcher,
            lag=self.lag,
        )
        task = asyncio.get_running_loop().create_task(runner.run())
        self._matches.add(task)
        if self.observer is not None:
            self.observer.match_started(match_id)
        try:
            record = await asyncio.shield(task)
        except BaseException:
            # shutdown, a cancelled caller, or a referee bug: the runner has
            # marked its record aborted; hand it over before propagating
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            # cancelled before its first step, `run` never saw the cancellation
            runner.abort(AbortReason.SHUTDOWN)
            if on_record is not None:
                on_record(runner.record)
            raise
        finally:
            self._matches.discard(task)
            if self.observer is not None:
                self.observer.match_ended(runner.record)
            self._notify()
        if on_record is not None:
            on_record(record)
        return record
