"""Operations around a referee: Prometheus metrics and the arena's HTTP server
(docs/OPERATIONS.md). Health checking, reflection, keepalive and TLS live with the
gRPC server itself (`cfarena.server.referee`).

`operations(config)` is what a long-running arena wraps itself in: it starts the
metrics and, with an HTTP port, the HTTP server on the running loop (with a
`WebSite`: the web page and JSON API of `cfarena.server.web` too), and gives the
`RefereeServer` options (`referee_options()`) that wire them together.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cfarena.server.ops.http import HttpServer, make_app
from cfarena.server.ops.metrics import ArenaMetrics
from cfarena.server.referee.transport import ServerTls

if TYPE_CHECKING:
    from cfarena.server.web import WebSite


@dataclass(frozen=True, slots=True)
class OpsConfig:
    """What `cfarena serve --tls-cert/--tls-key/--http-host/--http-port/--trusted-proxy`
    asked for."""

    tls: ServerTls | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None  # None: no HTTP server
    # reverse proxies whose X-Forwarded-For is believed (networks; none: the peer's
    # own address is the client's, whatever headers it sends)
    trusted_proxies: tuple[str, ...] = ()


@dataclass
class Operations:
    """The running operations side of an arena."""

    config: OpsConfig
    metrics: ArenaMetrics
    http: HttpServer | None = None
    web: WebSite | None = None

    def referee_options(self) -> dict[str, Any]:
        """Keyword arguments for `RefereeServer(...)`: TLS, the metrics observer and
        (with the web page) the live hub as the match watcher."""
        options: dict[str, Any] = {"tls": self.config.tls, "observer": self.metrics}
        if self.web is not None and self.config.http_port is not None:
            options["watcher"] = self.web.hub
        return options


@contextlib.asynccontextmanager
async def operations(config: OpsConfig, report: Callable[[str], None],
                     web: WebSite | None = None) -> AsyncIterator[Operations]:
    """Metrics, and the HTTP server if a port was given (with `web`: the web page and
    JSON API on it too), for as long as the block runs; OSError (one line) if the
    HTTP port cannot be listened on."""
    ops = Operations(config, ArenaMetrics(), web=web)
    if config.http_port is not None:
        if web is not None:
            from cfarena.server.web.app import make_web_app  # it imports ops.metrics

            app: Any = make_web_app(web, ops.metrics)
        else:
            app = make_app(ops.metrics)
        ops.http = HttpServer(app, config.http_host, config.http_port,
                              trusted_proxies=config.trusted_proxies)
        await ops.http.start()
        report(f"metrics on {ops.http.address}/metrics")
        if web is not None:
            report(f"web page on {ops.http.address}/")
    try:
        yield ops
    finally:
        if ops.http is not None:
            if web is not None:
                web.hub.close_all()  # the live streams end, so their responses finish
                await asyncio.sleep(0)
            await ops.http.stop()


__all__ = ["ArenaMetrics", "HttpServer", "Operations", "OpsConfig", "make_app", "operations"]
