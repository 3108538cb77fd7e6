"""The gate on the referee's Unix socket: what a sandbox may hold open there.

Every sandbox is shown the referee's Unix socket (`/run/cfarena/arena.sock`). gRPC
cannot tell which sandbox a connection on it comes from, nor bound the connections
one client holds, so a bot could open connections until the referee runs out of
file descriptors. The gate listens on that socket itself and relays each accepted
connection, byte for byte, to gRPC's own socket in a private directory:

- it asks the kernel who connected (`SO_PEERCRED`: the connecting process's PID, as
  the referee sees it) and reads that process's PID namespace, which is its
  sandbox's (every sandbox has one; the watchdog knows sandboxes by it too);
- a sandbox holds at most `per_sandbox` live connections: one more is closed at
  once, and the sandbox is reported (`on_excess`) with "connection limit N
  reached", which stops it as a limit fault of its bot;
- a connection that has not opened its first HTTP/2 stream within `first_stream_s`
  is closed (gRPC then limits the time to the Hello on that stream);
- all of the gate's connections together are at most `total` (from
  RLIMIT_NOFILE: each holds three of the referee's descriptors), and a connection
  whose peer cannot be identified (its process gone) is refused;
- running out of descriptors on accept pauses accepting for a moment, with one
  line in the log, instead of failing.

Processes in the referee's own PID namespace (unsandboxed bots of
`run-tournament --no-sandbox`, trusted by the organiser) are not capped per
sandbox, only by `total` and the first-stream timeout. Connections over TCP
(`serve`'s dial-in bots) do not pass through the gate.

Why a relay: gRPC Python has no way to hand it an accepted descriptor, so a gate
that only accepted could not pass the connection on; letting gRPC accept and
polling its descriptors for the peers' namespaces would be outrun by a flood. The
relay costs the referee one more pass of its event loop per message each way
(docs/REFEREE.md; `benchmarks/referee_gate.py` measures it).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("cfarena.referee")

HOST = "host"  # the key of connections from the referee's own PID namespace
PREFACE_BYTES = 24  # b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_FRAME_HEADER_BYTES = 9
_HEADERS_FRAME = 0x1
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_OUT_OF_DESCRIPTORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_ACCEPT_PAUSE_S = 0.5
_ACCEPTS_PER_WAKEUP = 64
_DRAIN_S = 2.0  # a closing end may take this long to write what it still holds


def default_total() -> int:
    """Connections the gate holds at most: each costs the referee three descriptors
    (the bot's end, the end towards gRPC and gRPC's), and at least half of
    RLIMIT_NOFILE stays for everything else (sandboxes, pipes, the database)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(16, min(4096, soft // 6))


@dataclass(frozen=True, slots=True)
class GateLimits:
    per_sandbox: int = 8  # live connections of one sandbox (a bot process needs 1)
    first_stream_s: float = 10.0  # to open a connection's first HTTP/2 stream
    total: int = field(default_factory=default_total)


def peer_namespace(conn: socket.socket) -> tuple[int, str] | None:
    """The PID (as this process sees it) and the PID namespace of the process that
    made `conn`, or None when it cannot be known (the process is gone)."""
    try:
        pid, _uid, _gid = _UCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
        if pid <= 0:  # a process outside our PID namespace's view
            return None
        return pid, os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


class FirstStream:
    """Reads a client's HTTP/2 bytes as they pass until the first HEADERS frame of a
    stream (the start of an RPC); `feed` says whether it has come."""

    def __init__(self) -> None:
        self._skip = PREFACE_BYTES  # bytes still to pass over (the preface, a payload)
        self._header = bytearray()

    def feed(self, data: bytes) -> bool:
        pos, end = 0, len(data)
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            take = _FRAME_HEADER_BYTES - len(self._header)
            self._header += data[pos:pos + take]
            pos += take
            if len(self._header) < _FRAME_HEADER_BYTES:
                break
            header, self._header = bytes(self._header), bytearray()
            stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
            if header[3] == _HEADERS_FRAME and stream:
                return True
            self._skip = int.from_bytes(header[0:3], "big")
        return False


class _Side(asyncio.Protocol):
    """One end of a relayed connection: what it reads is written to the other end."""

    def __init__(self, relay: _Relay, first_stream: FirstStream | None) -> None:
        self.relay = relay
        self.first_stream = first_stream  # the bot's end, until its first stream
        self.transport: asyncio.Transport | None = None
        self.other: _Side | None = None
        self.backlog: list[bytes] = []  # for this end, read before its transport was made
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        for chunk in self.backlog:
            transport.write(chunk)
        self.backlog.clear()

    def data_received(self, data: bytes) -> None:
        if self.first_stream is not None and self.first_stream.feed(data):
            self.first_stream = None
            self.relay.streaming()
        other = self.other
        if other is None:
            return
        if other.transport is not None:
            other.transport.write(data)
        else:
            other.backlog.append(data)

    def eof_received(self) -> bool:
        self.relay.close(graceful=True)  # what the other end still has to send goes first
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.relay.close(graceful=exc is None)
        self.relay.maybe_ended()

    # flow control: a slow reader on one end stops reading from the other
    def pause_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.resume_reading()


@dataclass(eq=False)
class _Relay:
    """A relayed connection. It counts against its sandbox until both of its ends are
    closed (an end that will not take what is left to write is cut after
    `_DRAIN_S`)."""

    gate: SocketGate
    key: str
    bot: _Side | None = None
    grpc: _Side | None = None
    timer: asyncio.TimerHandle | None = None
    closed: bool = False
    ended: bool = False

    def streaming(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def expire(self) -> None:
        self.timer = None
        self.gate.refused["no stream"] += 1
        self.close()

    def close(self, graceful: bool = False) -> None:
        """Close both ends: `graceful`, each after writing what it holds (within
        `_DRAIN_S`); else at once."""
        if self.closed:
            if not graceful:
                self._abort()
            return
        self.closed = True
        self.streaming()
        if not graceful:
            self._abort()
            return
        for side in (self.bot, self.grpc):
            if side is not None and side.transport is not None:
                side.transport.close()
        asyncio.get_running_loop().call_later(_DRAIN_S, self._abort)

    def _abort(self) -> None:
        for side in (self.bot, self.grpc):
            if side is not None and side.transport is not None and not side.lost:
                side.transport.abort()

    def maybe_ended(self) -> None:
        """Once every end that was made is closed, it no longer counts."""
        if self.ended or not self.closed:
            return
        if any(side is not None and side.transport is not None and not side.lost
               for side in (self.bot, self.grpc)):
            return
        self.ended = True
        self.gate._ended(self)


class SocketGate:
    """Listens on `path` and relays bounded connections to gRPC's socket `upstream`
    (see the module docstring). `on_excess(namespace, reason)` is told of a sandbox
    that went over its cap."""

    def __init__(self, path: Path, upstream: Path, limits: GateLimits | None = None, *,
                 on_excess: Callable[[str, str], None] | None = None) -> None:
        self.path = path
        self.upstream = upstream
        self.limits = limits or GateLimits()
        self.on_excess = on_excess
        # connections closed by the gate, by why: tests and the log read them
        self.refused: dict[str, int] = dict.fromkeys(
            ("sandbox limit", "total", "unknown peer", "no stream", "accept paused",
             "out of descriptors"), 0)
        self._listener: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._own_namespace = os.readlink("/proc/self/ns/pid")
        self._live: dict[str, set[_Relay]] = {}
        self._count = 0
        self._opening: set[asyncio.Task[None]] = set()
        self._paused: asyncio.TimerHandle | None = None
        self._warned: dict[str, float] = {}
        self._reported: set[str] = set()  # sandboxes reported over their limit
        self.peak_per_sandbox = 0  # the most connections one sandbox held at once

    @property
    def connections(self) -> int:
        """Connections the gate holds now."""
        return self._count

    def held_by(self, key: str) -> int:
        """Connections a sandbox (PID namespace, or HOST) holds now."""
        return len(self._live.get(key, ()))

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.path))
            listener.listen(socket.SOMAXCONN)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._loop.add_reader(listener.fileno(), self._accept)

    async def close(self) -> None:
        """Stop accepting and cut every connection."""
        if self._paused is not None:
            self._paused.cancel()
            self._paused = None
        if self._listener is not None and self._loop is not None:
            self._loop.remove_reader(self._listener.fileno())
            self._listener.close()
            self._listener = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for task in list(self._opening):
            task.cancel()
        await asyncio.gather(*self._opening, return_exceptions=True)
        for relays in list(self._live.values()):
            for relay in list(relays):
                relay.close()

    # ------------------------------------------------------------- accepting
    def _accept(self) -> None:
        listener = self._listener
        if listener is None:
            return
        for _ in range(_ACCEPTS_PER_WAKEUP):
            try:
                conn, _address = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    self._pause(exc)
                else:
                    self._warn("accept", f"accepting a connection failed: {exc}")
                return
            self._admit(conn)

    def _pause(self, exc: OSError) -> None:
        """Out of descriptors: stop accepting for a moment (what waits stays queued)."""
        assert self._loop is not None and self._listener is not None
        self.refused["accept paused"] += 1
        self._warn("descriptors", f"out of file descriptors accepting a connection "
                   f"({os.strerror(exc.errno or 0)}): accepts paused for {_ACCEPT_PAUSE_S:g} s")
        self._loop.remove_reader(self._listener.fileno())
        self._paused = self._loop.call_later(_ACCEPT_PAUSE_S, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if self._listener is not None and self._loop is not None:
            self._loop.add_reader(self._listener.fileno(), self._accept)

    def _admit(self, conn: socket.socket) -> None:
        peer = peer_namespace(conn)
        if peer is None:
            conn.close()
            self.refused["unknown peer"] += 1
            return
        key = HOST if peer[1] == self._own_namespace else peer[1]
        limits = self.limits
        if self._count >= limits.total:
            conn.close()
            self.refused["total"] += 1
            self._warn("total", f"{limits.total} connections on the referee's socket: "
                       "refusing more")
            self._blame_the_largest_holder()
            return
        if key != HOST and self.held_by(key) >= limits.per_sandbox:
            conn.close()
            self.refused["sandbox limit"] += 1
            if self.on_excess is not None and key not in self._reported:
                self._reported.add(key)  # once, while the sandbox holds connections
                self.on_excess(key, f"connection limit {limits.per_sandbox} reached")
            return
        relay = _Relay(self, key)
        self._live.setdefault(key, set()).add(relay)
        self._count += 1
        if key != HOST:
            self.peak_per_sandbox = max(self.peak_per_sandbox, len(self._live[key]))
        assert self._loop is not None
        task = self._loop.create_task(self._open(relay, conn))
        self._opening.add(task)
        task.add_done_callback(self._opening.discard)

    def _blame_the_largest_holder(self) -> None:
        """The total is reached: the sandbox holding the most connections (more than a
        bot needs) is reported, so that it is stopped and its connections freed; an
        honest bot's refused connection is then not its own fault alone."""
        held = [(len(relays), key) for key, relays in self._live.items()
                if key != HOST and key not in self._reported]
        if not held or self.on_excess is None:
            return
        count, key = max(held)
        if count > 1:
            self._reported.add(key)
            self.on_excess(key, f"connection limit reached: held {count} of the referee's "
                                f"{self.limits.total} connections when they ran out")

    async def _open(self, relay: _Relay, conn: socket.socket) -> None:
        """Connect to gRPC, then relay both ways."""
        loop = asyncio.get_running_loop()
        upstream: socket.socket | None = None
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.setblocking(False)
            await loop.sock_connect(upstream, str(self.upstream))
            bot, grpc = _Side(relay, FirstStream()), _Side(relay, None)
            bot.other, grpc.other = grpc, bot
            relay.bot, relay.grpc = bot, grpc
            await loop.create_unix_connection(lambda: grpc, sock=upstream)
            upstream = None
            await loop.connect_accepted_socket(lambda: bot, conn)
        except (OSError, asyncio.CancelledError) as exc:
            conn.close()
            if upstream is not None:
                upstream.close()
            if isinstance(exc, OSError) and exc.errno in _OUT_OF_DESCRIPTORS:
                self.refused["out of descriptors"] += 1
                self._warn("descriptors", "out of file descriptors relaying a connection "
                           f"({os.strerror(exc.errno or 0)})")
            relay.close()
            relay.maybe_ended()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        if relay.closed:  # an end closed while the other was being set up
            relay.close()
            relay.maybe_ended()
            return
        relay.timer = loop.call_later(self.limits.first_stream_s, relay.expire)

    def _ended(self, relay: _Relay) -> None:
        relays = self._live.get(relay.key)
        if relays is not None and relay in relays:
            relays.discard(relay)
            self._count -= 1
            if not relays:
                del self._live[relay.key]
                self._reported.discard(relay.key)

    def _warn(self, topic: str, message: str) -> None:
        """Log `message` at most every 10 s per topic (a flood must not flood the log)."""
        now = time.monotonic()
        if now - self._warned.get(topic, -1e9) >= 10.0:
            self._warned[topic] = now
            log.warning("referee: %s", message)
