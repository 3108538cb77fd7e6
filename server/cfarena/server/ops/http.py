"""The arena's HTTP side: an ASGI app (`make_app`: /metrics alone; with the web page,
`cfarena.server.web.make_web_app`) served by uvicorn on the referee's own event loop.

`HttpServer.start()` binds the port itself (a port in use is an OSError with one
line, not uvicorn's log and exit) and runs uvicorn's server as a task of the
running loop; `stop()` ends it. uvicorn's signal handling is left out: the
arena's own SIGINT/SIGTERM handlers stop everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from cfarena.server.ops.metrics import CONTENT_TYPE, ArenaMetrics


def make_app(metrics: ArenaMetrics) -> Starlette:
    """The ASGI app: GET /metrics (Prometheus text format)."""

    async def metrics_page(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    async def index(request: Request) -> Response:
        return PlainTextResponse("cfarena arena: /metrics\n")

    return Starlette(routes=[Route("/metrics", metrics_page), Route("/", index)])


class _Embedded(uvicorn.Server):
    """uvicorn's server without its signal handlers (the host program has its own)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpServer:
    """Serves an ASGI app on HOST:PORT in the running event loop."""

    def __init__(self, app: ASGIApp, host: str, port: int) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._server: _Embedded | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Bind and serve; the port (useful with port 0). OSError if it cannot listen."""
        sock = _bind(self.host, self.port)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(self.app, lifespan="off", access_log=False, log_config=None,
                                log_level="warning", timeout_graceful_shutdown=1)
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
