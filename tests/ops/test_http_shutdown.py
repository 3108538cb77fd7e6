"""Stopping the arena's HTTP server while requests are still running (a live view's
stream, a slow page): uvicorn cancels them after its grace and would log a traceback for
each and answer 500; the server answers 503 or ends the stream instead, quietly. A real
uvicorn server on a real socket."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from cfarena.server.ops.http import HttpServer


def _app() -> Starlette:
    async def slow(request: Request) -> Response:
        await asyncio.sleep(60)
        return PlainTextResponse("too late\n")

    async def stream(request: Request) -> Response:
        async def lines() -> AsyncIterator[bytes]:
            while True:
                yield b"data: tick\n\n"
                await asyncio.sleep(0.05)

        return StreamingResponse(lines(), media_type="text/event-stream")

    return Starlette(routes=[Route("/slow", slow), Route("/stream", stream)])


async def _get(port: int, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


def test_requests_running_at_stop_get_503_or_their_stream_ended_and_no_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> tuple[bytes, bytes, float]:
        http = HttpServer(_app(), "127.0.0.1", 0)
        port = await http.start()
        slow_reader, slow_writer = await _get(port, "/slow")
        stream_reader, stream_writer = await _get(port, "/stream")
        assert b"200" in await asyncio.wait_for(stream_reader.readline(), 5)
        await asyncio.sleep(0.3)  # the slow request is in its route by now
        started = time.monotonic()
        await asyncio.wait_for(http.stop(), 15)
        took = time.monotonic() - started
        slow = await asyncio.wait_for(slow_reader.read(), 5)
        streamed = await asyncio.wait_for(stream_reader.read(), 5)  # to its end
        for writer in (slow_writer, stream_writer):
            writer.close()
        return slow, streamed, took

    with caplog.at_level(logging.WARNING):
        slow, streamed, took = asyncio.run(scenario())
    assert slow.startswith(b"HTTP/1.1 503"), slow[:200]
    assert slow.endswith(b"the server is shutting down\n"), slow[-200:]
    assert b"data: tick" in streamed and streamed.endswith(b"0\r\n\r\n"), streamed[-200:]
    assert took < 10, took
    logged = [r.getMessage() for r in caplog.records if r.exc_info or "ASGI" in r.getMessage()]
    assert logged == [], logged
