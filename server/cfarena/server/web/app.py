"""The arena's web app: pages, JSON API (OpenAPI at /openapi.json), static files and
/metrics, as one FastAPI app served by the arena's own uvicorn (ops/http.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from cfarena.server.ops.metrics import CONTENT_TYPE, ArenaMetrics
from cfarena.server.storage import StorageError
from cfarena.server.web import api, entrant, pages
from cfarena.server.web.data import NotFound
from cfarena.server.web.limits import BodyLimit
from cfarena.server.web.site import WebSite

STATIC = Path(__file__).parent / "static"


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/openapi.json"


def make_web_app(site: WebSite, metrics: ArenaMetrics | None = None) -> FastAPI:
    """The app; `metrics` adds GET /metrics (Prometheus text format)."""
    app = FastAPI(
        title="cfarena",
        summary="The Chicken Foot bot arena: leaderboard, bots, matches, live view.",
        description="Read-only endpoints need no token. Admin endpoints need "
                    "`Authorization: Bearer <admin token>` (`cfarena serve "
                    "--admin-token-file`). A match's seed, log and hands are only served "
                    "once every match dealt with its seed is over.",
        version="1",
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN
    )
    app.state.site = site
    app.add_middleware(BodyLimit)  # before any body is read: see limits.py
    app.include_router(api.make_router())
    app.include_router(pages.make_router())
    app.include_router(entrant.make_router())
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    if metrics is not None:
        @app.get("/metrics", include_in_schema=False)
        async def metrics_page() -> Response:
            return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.exception_handler(entrant.NotSignedIn)
    async def not_signed_in(request: Request, exc: entrant.NotSignedIn) -> Response:
        return entrant.not_signed_in(request)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        if _wants_json(request):
            return JSONResponse({"detail": str(exc)}, status_code=404)
        return pages.not_found_page(request, exc)

    @app.exception_handler(StorageError)
    async def storage_error(request: Request, exc: StorageError) -> Response:
        # the detail (it may quote SQL and its parameters) goes to the organiser only
        print(f"web: database error on {request.url.path}: {exc}", file=sys.stderr,
              flush=True)
        text = "the database is not available; try again shortly"
        if _wants_json(request):
            return JSONResponse({"detail": text}, status_code=503)
        return pages.page(request, "message.html", status=503, title="Unavailable",
                          message=text)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> Response:
        # a malformed id or parameter (web/params.py): 422, before any database query
        if _wants_json(request):
            return await request_validation_exception_handler(request, exc)
        return pages.page(request, "message.html", status=422, title="Malformed address",
                          message="Nothing can be at this address: an id or a parameter "
                                  "is malformed.")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if _wants_json(request) or exc.status_code not in (404, 405):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code,
                                headers=getattr(exc, "headers", None))
        return pages.page(request, "message.html", status=exc.status_code,
                          title="Not found", message=f"Nothing at {request.url.path}.")

    return app
