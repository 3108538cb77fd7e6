"""A cap on request bodies, checked before anything reads them.

FastAPI reads and parses a JSON body before it runs a route's dependencies, so the
admin token check (`api.require_admin`) comes too late to stop an anonymous client
from posting megabytes of JSON: `json.loads` of 64 MB runs for seconds on the
referee's event loop. The only bodies the API takes are `{"name": ...}`, so anything
above `MAX_BODY_BYTES` is refused with 413: at once from Content-Length, or while
a chunked body is being received. (Hand-written: Starlette and uvicorn have no
body-size limit; this is a few lines of ASGI.)
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 16 * 1024


class BodyLimit:
    """ASGI middleware: HTTP requests whose body exceeds `limit` bytes get 413."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    def _too_large(self) -> str:
        return f"request body too large (at most {self.limit} bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await JSONResponse({"detail": self._too_large()}, status_code=413)(
                scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # chunked: refused by the route's error handler
                    raise HTTPException(413, self._too_large())
            return message

        await self.app(scope, limited, send)
