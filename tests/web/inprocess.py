"""The web app served in-process by the arena's own HTTP server (`ops.http.HttpServer`:
uvicorn on a real socket) on a loop in a thread, for tests that need no referee and
no bots: requests go over real HTTP, answers come from a real database."""

from __future__ import annotations

import asyncio
import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from cfarena.server.ops.http import HttpServer
from cfarena.server.storage import open_database
from cfarena.server.web import LiveHub, WebSite
from cfarena.server.web.app import make_web_app
from cfarena.server.web.site import Ladder


@contextmanager
def web_app(db_url: str, admin_token: str | None = None) -> Iterator[int]:
    """Serve the web app of `db_url` on 127.0.0.1; yields its port."""
    with served_site(db_url, admin_token) as (port, _site, _loop):
        yield port


@contextmanager
def served_site(db_url: str, admin_token: str | None = None, ladder: Ladder | None = None
                ) -> Iterator[tuple[int, WebSite, asyncio.AbstractEventLoop]]:
    """`web_app`, yielding (its port, its site, the loop it runs on): with `ladder` (what
    an arena would be: its connected bots, its table size) as the site's."""
    loop = asyncio.new_event_loop()
    port: list[int] = []
    with open_database(db_url) as db:
        site = WebSite(db, "standard/4p", LiveHub(), admin_token=admin_token, ladder=ladder)
        server = HttpServer(make_web_app(site), "127.0.0.1", 0)

        async def start() -> None:
            port.append(await server.start())

        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        asyncio.run_coroutine_threadsafe(start(), loop).result(30)
        try:
            yield port[0], site, loop
        finally:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
            site.close()


def request(port: int, method: str, target: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One request with `target` sent as it is (no quoting); the status and body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for key, value in {"Content-Length": str(len(body or b"")), **(headers or {})
                           }.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()
