"""The arena's HTTP server closes connections that send no request (uvicorn alone waits
forever: thousands of idle sockets would use up the referee process's file descriptors).
A real uvicorn server on a real socket, with a short deadline."""

from __future__ import annotations

import asyncio
import time

from cfarena.server.ops.http import HttpServer, make_app
from cfarena.server.ops.metrics import ArenaMetrics

DEADLINE_S = 0.5


async def _closed_after(reader: asyncio.StreamReader, limit_s: float) -> float:
    """Seconds until the server closed the connection (reads return b"", or a reset:
    a server that closes a socket with bytes of the client's still unread, as the
    trickling client's, resets it)."""
    start = time.monotonic()
    while True:
        try:
            data = await asyncio.wait_for(reader.read(1024), limit_s)
        except ConnectionResetError:
            return time.monotonic() - start
        if data == b"":
            return time.monotonic() - start


def test_idle_and_trickling_connections_are_closed_and_requests_still_served() -> None:
    async def scenario() -> None:
        http = HttpServer(make_app(ArenaMetrics()), "127.0.0.1", 0,
                          request_deadline_s=DEADLINE_S)
        port = await http.start()
        try:
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
            trickle_reader, trickle_writer = await asyncio.open_connection("127.0.0.1", port)

            async def trickle() -> None:
                for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\n":
                    if trickle_writer.is_closing():
                        return
                    trickle_writer.write(bytes([byte]))
                    await asyncio.sleep(0.05)

            trickling = asyncio.create_task(trickle())
            # a well-behaved client meanwhile gets its answer
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 5)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
            writer.close()

            waits = [await _closed_after(r, 5.0) for r, _w in idle]
            assert max(waits) < DEADLINE_S + 2.0, waits
            assert await _closed_after(trickle_reader, 5.0) < DEADLINE_S + 2.0
            trickling.cancel()
            for _r, w in [*idle, (trickle_reader, trickle_writer)]:
                w.close()
        finally:
            await http.stop()

    asyncio.run(scenario())


def test_a_connection_that_made_its_request_is_not_cut_by_the_deadline() -> None:
    """Keep-alive after a request is uvicorn's own timeout (5 s), not the deadline."""
    async def scenario() -> None:
        http = HttpServer(make_app(ArenaMetrics()), "127.0.0.1", 0,
                          request_deadline_s=DEADLINE_S)
        port = await http.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(2):  # two requests on one connection, the second after the deadline
                writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
                assert head.startswith(b"HTTP/1.1 200"), head
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                await reader.readexactly(length)
                await asyncio.sleep(DEADLINE_S * 2)
            writer.close()
        finally:
            await http.stop()

    asyncio.run(scenario())
