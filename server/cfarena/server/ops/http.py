"""The arena's HTTP side: an ASGI app (`make_app`: /metrics alone; with the web page,
`cfarena.server.web.make_web_app`) served by uvicorn on the referee's own event loop.

`HttpServer.start()` binds the port itself (a port in use is an OSError with one
line, not uvicorn's log and exit) and runs uvicorn's server as a task of the
running loop; `stop()` ends it. uvicorn's signal handling is left out: the
arena's own SIGINT/SIGTERM handlers stop everything. A request still running when
the stop's grace ends (a live view's stream, a replay being drawn) is answered 503
or its stream ended (`_EndsQuietly`), not a traceback and a 500 from uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Generator, Sequence

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from cfarena.server.ops.metrics import CONTENT_TYPE, ArenaMetrics


def make_app(metrics: ArenaMetrics) -> Starlette:
    """The ASGI app: GET /metrics (Prometheus text format)."""

    async def metrics_page(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    async def index(request: Request) -> Response:
        return PlainTextResponse("cfarena arena: /metrics\n")

    return Starlette(routes=[Route("/metrics", metrics_page), Route("/", index)])


REQUEST_DEADLINE_S = 10.0  # a connection must have sent a request's headers by then
MAX_CONNECTIONS = 1000  # connections (and requests in progress) at once; 503 beyond


class _DeadlineH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection that has not sent a whole
    request's headers within `request_deadline_s` of connecting. uvicorn itself waits
    forever for the first request (Kludex/uvicorn#1192): idle or trickling sockets
    would pile up in the arena's process, which is also the referee, until its file
    descriptors ran out and no bot could connect. `MAX_CONNECTIONS` bounds the rest."""

    request_deadline_s = REQUEST_DEADLINE_S
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline = self.loop.call_later(self.request_deadline_s, self._no_request)

    def _no_request(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)


class _Embedded(uvicorn.Server):
    """uvicorn's server without its signal handlers (the host program has its own)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class _EndsQuietly:
    """ASGI wrapper: uvicorn cancels the requests still running when its graceful
    shutdown times out, logs each one's traceback and answers 500. While the server
    stops (`stopping`), a cancelled request is answered 503 "shutting down" instead, or,
    if its response had started (a stream), that response is ended."""

    def __init__(self, app: ASGIApp, stopping: Callable[[], bool]) -> None:
        self.app = app
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if not self.stopping():
                raise
            body = b"" if started else b"the server is shutting down\n"
            with contextlib.suppress(Exception):  # the client may be gone
                if not started:
                    await send({"type": "http.response.start", "status": 503,
                                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                            (b"content-length", str(len(body)).encode()),
                                            (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body, "more_body": False})


class HttpServer:
    """Serves an ASGI app on HOST:PORT in the running event loop. A request's client
    address is its peer's, unless the peer is one of `trusted_proxies` (addresses or
    networks): then the address its X-Forwarded-For names."""

    def __init__(self, app: ASGIApp, host: str, port: int,
                 request_deadline_s: float = REQUEST_DEADLINE_S,
                 trusted_proxies: Sequence[str] = ()) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.request_deadline_s = request_deadline_s
        self.trusted_proxies = list(trusted_proxies)
        self._server: _Embedded | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Bind and serve; the port (useful with port 0). OSError if it cannot listen."""
        sock = _bind(self.host, self.port)
        self.port = int(sock.getsockname()[1])
        protocol = type("DeadlineH11", (_DeadlineH11,),
                        {"request_deadline_s": self.request_deadline_s})
        app = _EndsQuietly(self.app, lambda: server.should_exit)
        config = uvicorn.Config(app, lifespan="off", access_log=False, log_config=None,
                                log_level="warning", timeout_graceful_shutdown=1,
                                http=protocol, limit_concurrency=MAX_CONNECTIONS,
                                # uvicorn believes X-Forwarded-For from 127.0.0.1 unless
                                # told otherwise: a client would pick its own address
                                # (the web's per-client caps): only from named proxies
                                proxy_headers=bool(self.trusted_proxies),
                                forwarded_allow_ips=self.trusted_proxies or None)
        server = _Embedded(config)
        self._server = server
        self._task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self._task.done():  # it failed to start: say why
                await self._task
                raise OSError(f"cannot serve HTTP on {self.address}")
            await asyncio.sleep(0.01)
        return self.port

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        server, task = self._server, self._task
        self._server = self._task = None
        if server is None or task is None:
            return
        server.should_exit = True
        await asyncio.gather(task, return_exceptions=True)


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on HOST:PORT; OSError "cannot listen on HOST:PORT: reason"."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family, kind, proto, _name, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {_reason(exc)}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {_reason(exc)}") from None
    return sock


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
