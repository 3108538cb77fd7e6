"""The JSON API (`/api/...`, described at `/openapi.json`): read-only without a
token; the admin actions need `Authorization: Bearer <admin token>`."""

from __future__ import annotations

import hmac
import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from sse_starlette.sse import EventSourceResponse

from cfarena.server.credentials import hash_token, new_token
from cfarena.server.storage import BotNameTaken, MatchStatus, StorageError
from cfarena.server.web import schemas
from cfarena.server.web import tournaments as tournament_view
from cfarena.server.web.data import NotFound
from cfarena.server.web.hub import TooManyFromClient, TooManyViewers, Viewer, client_key
from cfarena.server.web.params import BotName, BotQuery, MatchId, PoolQuery, TournamentId
from cfarena.server.web.site import WebSite

PING_S = 15  # SSE keep-alive comments

_ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": schemas.Problem, "description": "missing or wrong admin token"},
    403: {"model": schemas.Problem, "description": "no admin token configured"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": schemas.Problem, "description": "no such bot, match or tournament"}}

_logger = logging.getLogger("cfarena.web")


def some_lines(lines: Iterator[str], count: int = 20) -> str:
    """The next `count` lines of `lines` as one piece ("" once there are none)."""
    return "".join(itertools.islice(lines, count))


def site_of(request: Request) -> WebSite:
    site: WebSite = request.app.state.site
    return site


Site = Annotated[WebSite, Depends(site_of)]


def require_admin(request: Request) -> WebSite:
    """The admin token, compared in constant time: 403 when none is configured,
    401 when it is missing or wrong."""
    site = site_of(request)
    if site.admin_token is None:
        raise HTTPException(403, "no admin token configured")
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("utf-8"), site.admin_token.encode("utf-8")):
        raise HTTPException(401, "missing or wrong admin token",
                            headers={"WWW-Authenticate": "Bearer"})
    return site


Admin = Annotated[WebSite, Depends(require_admin)]


def sse(viewer: Viewer) -> EventSourceResponse:
    async def stream() -> AsyncIterator[dict[str, str]]:
        async for kind, data in viewer.messages():
            yield {"event": kind, "data": data}

    return EventSourceResponse(stream(), ping=PING_S, headers={"Cache-Control": "no-store"})


def make_router() -> APIRouter:
    api = APIRouter(prefix="/api")

    @api.get("/leaderboard", response_model=schemas.Leaderboard, tags=["read"])
    async def leaderboard(site: Site, pool: PoolQuery = None) -> dict[str, Any]:
        """The ladder of a pool (default: the arena's), best first."""
        shown = pool or site.pool
        return await site.read(site.data.leaderboard, shown, *site.presence(shown))

    @api.get("/bots/{name}", response_model=schemas.Bot, responses=_NOT_FOUND, tags=["read"])
    async def bot(site: Site, name: BotName, pool: PoolQuery = None) -> dict[str, Any]:
        """A bot: versions (rating, decision times), rating history, matches, faults."""
        return await site.read(site.data.bot, name, pool or site.pool)

    @api.get("/matches", response_model=list[schemas.MatchSummary], tags=["read"])
    async def matches(site: Site, bot: BotQuery = None,
                      status: MatchStatus | None = None,
                      limit: Annotated[int, Query(ge=1, le=500)] = 50) -> list[dict[str, Any]]:
        """Matches, newest first (no seeds: see one match)."""
        return await site.read(site.data.matches, bot, status, limit)

    @api.get("/matches/{match_id}", response_model=schemas.MatchDetail, responses=_NOT_FOUND,
             tags=["read"])
    async def match(site: Site, match_id: MatchId) -> dict[str, Any]:
        """One match: result, points per round, faults; the seed and the log link only
        once every match dealt with its seed is over."""
        return await site.read(site.data.match, match_id)

    @api.get("/tournaments", response_model=list[schemas.TournamentSummary], tags=["read"])
    async def tournaments(site: Site) -> list[dict[str, Any]]:
        """Tournaments, newest first, with their progress (no seeds, no commands)."""
        return await site.read(tournament_view.tournaments, site.db)

    @api.get("/tournaments/{tournament_id}", response_model=schemas.Tournament,
             responses=_NOT_FOUND, tags=["read"])
    async def tournament(site: Site, tournament_id: TournamentId) -> dict[str, Any]:
        """A tournament: progress, standings and its latest matches."""
        return await site.read(tournament_view.tournament, site.db, tournament_id)

    @api.get("/tournaments/{tournament_id}/games", tags=["read"], responses={
        **_NOT_FOUND, 200: {"description": "every game log, one a line (JSON Lines, as "
                            "`cfarena export --tournament` writes them)",
                            "content": {"application/jsonl": {}}},
        409: {"model": schemas.Problem, "description": "the tournament is not finished"}})
    async def games(site: Site, tournament_id: TournamentId) -> Response:
        """All games of a finished tournament (409 before), streamed."""
        lines = await site.read(tournament_view.games, site.db, tournament_id)
        if lines is None:
            return JSONResponse({"detail": "not available until the tournament is finished"},
                                status_code=409)

        async def chunks() -> AsyncIterator[str]:
            try:
                while chunk := await site.read(some_lines, lines):  # read in the web's threads
                    yield chunk
            except StorageError as exc:  # the status went out already: say so in the file
                _logger.warning("tournament %s download cut: %s", tournament_id, exc)
                yield json.dumps({"error": f"{exc}; this file is incomplete"}) + "\n"

        return StreamingResponse(chunks(), media_type="application/jsonl", headers={
            "Content-Disposition":
                f'attachment; filename="tournament-{tournament_id}-games.jsonl"'})

    @api.get("/matches/{match_id}/log", tags=["read"], responses={
        **_NOT_FOUND, 200: {"description": "the game log (docs/gamelog.md)",
                            "content": {"application/json": {"schema": {"type": "object"}}}},
        409: {"model": schemas.Problem, "description": "the deal is not over yet"}})
    async def log(site: Site, match_id: MatchId) -> JSONResponse:
        """The game log, once every match dealt with its seed is over (409 before)."""
        found = await site.read(site.data.log, match_id)
        if found is None:
            return JSONResponse({"detail": "not available until every match with this deal "
                                           "is over"}, status_code=409)
        return JSONResponse(found)

    @api.get("/matches/{match_id}/live", tags=["live"], responses={
        **_NOT_FOUND, 200: {"description": "server-sent events: snapshot, update, ended, "
                            "stored (public information only)",
                            "content": {"text/event-stream": {}}},
        429: {"model": schemas.Problem, "description": "too many streams from this address"},
        503: {"model": schemas.Problem, "description": "too many viewers"}})
    async def live(site: Site, match_id: MatchId, request: Request) -> EventSourceResponse:
        """Server-sent events of a running match: public snapshots and events."""
        # subscribed before the status is read: a match stored in between is told
        # to this viewer by the hub, or found finished here (never neither)
        viewer = _watch(site, match_id, request)
        try:
            status = await site.read(site.data.status, match_id)
        except BaseException:
            viewer.close()
            site.hub.forget_waiting(match_id)
            raise
        if status is None:
            viewer.close()
            site.hub.forget_waiting(match_id)
            raise NotFound(f"no match {match_id!r}")
        if status in (MatchStatus.FINISHED, MatchStatus.ABORTED) \
                and match_id not in site.hub.running():
            # over before this viewer came: nothing live to show
            viewer.offer("stored", json.dumps({"match": match_id, "status": status.value}))
            viewer.close()
            site.hub.forget_waiting(match_id)
        return sse(viewer)

    @api.get("/events", tags=["live"], responses={
        200: {"description": "server-sent events: started, ended, finished, aborted",
              "content": {"text/event-stream": {}}},
        429: {"model": schemas.Problem, "description": "too many streams from this address"},
        503: {"model": schemas.Problem, "description": "too many viewers"}})
    async def events(site: Site, request: Request) -> EventSourceResponse:
        """Server-sent events of the ladder: matches started and finished."""
        try:
            viewer = site.hub.watch_ladder(_client(request))
        except TooManyViewers as exc:
            raise HTTPException(429 if isinstance(exc, TooManyFromClient) else 503,
                                str(exc)) from None
        return sse(viewer)

    # ----------------------------------------------------------------- admin
    @api.post("/admin/bots", response_model=schemas.NewToken, responses={
        **_ADMIN_ERRORS, 409: {"model": schemas.Problem, "description": "name taken"}},
        tags=["admin"])
    async def add_bot(site: Admin, body: schemas.BotName) -> dict[str, str]:
        """Register a bot; its token is in this answer only."""
        token = new_token()
        try:
            await site.read(site.db.register_bot, body.name, hash_token(token))
        except BotNameTaken as exc:
            raise HTTPException(409, str(exc)) from None
        return {"name": body.name, "token": token}

    @api.post("/admin/bots/{name}/rotate", response_model=schemas.NewToken,
              responses={**_ADMIN_ERRORS, **_NOT_FOUND}, tags=["admin"])
    async def rotate(site: Admin, name: BotName) -> dict[str, str]:
        """A new token for the bot (in this answer only); the old one stops working."""
        token = new_token()
        await _bot_call(site, site.db.rotate_token, name, hash_token(token))
        return {"name": name, "token": token}

    @api.post("/admin/bots/{name}/revoke", response_model=schemas.Done,
              responses={**_ADMIN_ERRORS, **_NOT_FOUND}, tags=["admin"])
    async def revoke(site: Admin, name: BotName) -> dict[str, Any]:
        """Revoke the bot's token: its connections are closed within about a second."""
        await _bot_call(site, site.db.revoke_bot, name)
        return {"ok": True, "detail": f"bot {name!r} revoked"}

    @api.post("/admin/tournaments/{tournament_id}/entrants/{name}/web-key",
              response_model=schemas.NewToken, responses={**_ADMIN_ERRORS, **_NOT_FOUND},
              tags=["admin"])
    async def entrant_web_key(site: Admin, tournament_id: TournamentId,
                              name: BotName) -> dict[str, str]:
        """A new web key for a tournament's entrant (in this answer only): it signs the
        entrant in to their pages (`/me`); the previous key stops working, and the
        sessions made with it end. Its processes are admitted as before."""
        token = new_token()
        try:
            await site.read(site.db.rotate_token, name, hash_token(token), tournament_id)
        except StorageError as exc:
            if "has no entrant" in str(exc):
                raise HTTPException(404, str(exc)) from None
            raise
        return {"name": name, "token": token}

    @api.post("/admin/ladder/pause", response_model=schemas.Ladder,
              responses=_ADMIN_ERRORS, tags=["admin"])
    async def pause(site: Admin) -> dict[str, bool]:
        """Start no new table (running matches finish)."""
        ladder = _ladder(site)
        ladder.pause()
        return {"paused": ladder.paused}

    @api.post("/admin/ladder/resume", response_model=schemas.Ladder,
              responses=_ADMIN_ERRORS, tags=["admin"])
    async def resume(site: Admin) -> dict[str, bool]:
        """Start tables again."""
        ladder = _ladder(site)
        ladder.resume()
        return {"paused": ladder.paused}

    return api


def _client(request: Request) -> str | None:
    """The address key a stream counts against (uvicorn puts a trusted proxy's
    X-Forwarded-For here)."""
    return client_key(request.client.host if request.client is not None else None)


def _watch(site: WebSite, match_id: str, request: Request) -> Viewer:
    try:
        return site.hub.watch_match(match_id, _client(request))
    except TooManyViewers as exc:
        raise HTTPException(429 if isinstance(exc, TooManyFromClient) else 503,
                            str(exc)) from None


def _ladder(site: WebSite) -> Any:
    if site.ladder is None:
        raise HTTPException(503, "the ladder is not running")
    return site.ladder


async def _bot_call(site: WebSite, fn: Any, name: str, *args: Any) -> None:
    if await site.read(site.db.bot_by_name, name) is None:
        raise HTTPException(404, f"no bot named {name!r}")
    try:
        await site.read(fn, name, *args)
    except StorageError as exc:
        if "no bot named" in str(exc):
            raise HTTPException(404, f"no bot named {name!r}") from None
        raise
