"""Operations around a referee: Prometheus metrics and the arena's HTTP server
(docs/OPERATIONS.md). Health checking, reflection, keepalive and TLS live with the
gRPC server itself (`cfarena.server.referee`).

`operations(config)` is what a long-running arena wraps itself in: it starts the
metrics and, with an HTTP port, the HTTP server on the running loop (serving the app
it is given: `make_app`'s /metrics alone by default; `cfarena serve` gives it the web
page's, `cfarena.server.serve_assembly`), and gives the `RefereeServer` options
(`referee_options()`) that report to the metrics. The HTTP server's modules (uvicorn,
Starlette) are loaded only for a port: an arena without one starts without them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cfarena.server.ops.metrics import ArenaMetrics
from cfarena.server.referee.transport import ServerTls

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from cfarena.server.ops.http import HttpServer


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

    def referee_options(self) -> dict[str, Any]:
        """Keyword arguments for `RefereeServer(...)`: TLS and the metrics observer."""
        return {"tls": self.config.tls, "observer": self.metrics}


@contextlib.asynccontextmanager
async def operations(config: OpsConfig, report: Callable[[str], None],
                     app: Callable[[ArenaMetrics], ASGIApp] | None = None
                     ) -> AsyncIterator[Operations]:
    """Metrics, and the HTTP server if a port was given (serving `app(metrics)`, which
    serves the metrics at /metrics; by default `ops.http.make_app`'s /metrics alone), for
    as long as the block runs; OSError (one line) if the HTTP port cannot be listened
    on."""
    ops = Operations(config, ArenaMetrics())
    if config.http_port is not None:
        from cfarena.server.ops.http import HttpServer, make_app

        app = app or make_app
        ops.http = HttpServer(app(ops.metrics), config.http_host, config.http_port,
                              trusted_proxies=config.trusted_proxies)
        await ops.http.start()
        report(f"metrics on {ops.http.address}/metrics")
    try:
        yield ops
    finally:
        if ops.http is not None:
            await ops.http.stop()


__all__ = ["ArenaMetrics", "Operations", "OpsConfig", "operations"]
