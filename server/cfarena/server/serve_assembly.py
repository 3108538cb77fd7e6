"""`cfarena serve` put together: the one place that wires the arena (`arena.Arena`, with
its referee), its operations side (`ops`: metrics, the HTTP server, TLS) and the web
page (`web`: pages, JSON API, live view).

The rooms it joins know one another only through what they are handed here: the
referee reports to the metrics (`RefereeObserver`) and tells the web's live hub when a
match starts and ends (`MatchWatcher`); the HTTP server serves the app it is given
(the web's, with /metrics); the web's admin actions pause the arena (`web.site.Ladder`)
and its live view hears of each stored match (`Arena.on_stored`), as does `ops.memory`,
which gives the allocator's freed memory back after each match. Nothing below
imports the web but this module (and the web itself), and this module only when it
serves it (with an HTTP port: FastAPI, Jinja2 and the rest are 0.3 s of a start-up that
many arenas do without); the CLI (`cli/serve.py`) only turns options into the values
this takes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from cfarena.server.arena import Arena, ArenaConfig, ServeResult
from cfarena.server.arena.service import say
from cfarena.server.ops import OpsConfig, operations
from cfarena.server.ops.memory import FreedMemory, fix_mmap_threshold, limit_arenas

if TYPE_CHECKING:
    from cfarena.server.storage import Database


async def run_serve(db: Database, config: ArenaConfig, ops_config: OpsConfig,
                    admin_token: str | None = None,
                    report: Callable[[str], None] = say) -> ServeResult:
    """The arena with its operations side around it (metrics; with an HTTP port, the
    HTTP server with the web page and JSON API), until it stops."""
    limit_arenas()  # before the referee's and the web's threads allocate
    fix_mmap_threshold()
    if ops_config.http_port is None:
        async with operations(ops_config, report) as ops:
            arena = Arena(db, replace(config, referee_options=ops.referee_options()),
                          report)
            arena.on_stored.append(FreedMemory().after_match)
            return await arena.run()
    from cfarena.server.web import LiveHub, WebSite
    from cfarena.server.web.app import make_web_app

    web = WebSite(db, config.pool, LiveHub(), admin_token=admin_token)
    try:
        async with operations(ops_config, report,
                              functools.partial(make_web_app, web)) as ops:
            assert ops.http is not None
            report(f"web page on {ops.http.address}/")
            options = {**ops.referee_options(), "watcher": web.hub}
            arena = Arena(db, replace(config, referee_options=options), report)
            web.ladder = arena
            arena.on_stored.append(web.hub.stored)
            arena.on_stored.append(FreedMemory().after_match)
            try:
                return await arena.run()
            finally:
                web.hub.close_all()  # the live streams end, so their responses finish
                await asyncio.sleep(0)
    finally:
        web.close()
