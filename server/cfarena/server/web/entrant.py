"""The entrant's pages (`/me`): signed in with their bot's token, an entrant sees their
own bot's matches with the ids it was given, each match's output and turns as its
seat saw them, and downloads its games a page at a time, one download at a time
(docs/WEB.md, "Entrants"). Sessions: `entrant_session`; reads: `entrant_data`; what a
seat saw: `seat_view`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from cfarena.server.credentials import hash_token
from cfarena.server.storage import BotInfo, StorageError
from cfarena.server.web import entrant_data
from cfarena.server.web.api import some_lines
from cfarena.server.web.data import NotFound
from cfarena.server.web.entrant_session import csrf_ok, csrf_token, keep_csrf, sign_out
from cfarena.server.web.pages import page
from cfarena.server.web.params import MAX_TEXT, MatchId
from cfarena.server.web.site import WebSite

SIGN_IN = "/me/sign-in"
MAX_TOKEN = 200  # characters: far beyond any token `credentials.new_token` makes


class NotSignedIn(Exception):
    """The request carries no valid session (pages send to the sign-in form)."""


async def current_bot(request: Request) -> BotInfo:
    """The session's bot, if the session is genuine and its token still the bot's
    (NotSignedIn otherwise: no cookie, a forged or expired one, a rotated or revoked
    token)."""
    site: WebSite = request.app.state.site
    session = site.sessions.signed_in(request)
    if session is None:
        raise NotSignedIn()
    bot = await site.read(site.db.bot_by_id, session.bot)
    if bot is None or not site.sessions.still_valid(session, bot):
        raise NotSignedIn()
    return bot


def _with_csrf(request: Request, response: Response, token: str) -> Response:
    keep_csrf(response, request, token)
    response.headers["Cache-Control"] = "no-store"  # nobody else's browser cache keeps it
    return response


def _sign_in_page(request: Request, status: int = 200, error: str | None = None) -> Response:
    token = csrf_token(request)
    return _with_csrf(request, page(request, "entrant_sign_in.html", status=status,
                                    csrf=token, error=error), token)


def make_router() -> APIRouter:
    me = APIRouter(prefix="/me", include_in_schema=False, default_response_class=HTMLResponse)

    @me.get("/sign-in")
    async def sign_in_form(request: Request) -> Response:
        return _sign_in_page(request)

    @me.post("/sign-in")
    async def sign_in(request: Request) -> Response:
        site: WebSite = request.app.state.site
        form = await _form(request)
        if not csrf_ok(request, form.get("csrf")):
            return _sign_in_page(request, 403, "This form expired or came from another "
                                 "page: sign in again from this one.")
        given = form.get("token", "").strip()
        bot = None
        if 0 < len(given) <= MAX_TOKEN:
            bot = await site.read(site.db.entrant_by_token_hash, hash_token(given))
        if bot is None:
            return _sign_in_page(request, 401, "No bot has this token (a rotated or "
                                 "revoked token admits nothing). Ask the organiser for "
                                 "your bot's current token.")
        response = RedirectResponse("/me", status_code=303)
        site.sessions.sign_in(response, request, bot)
        return response

    @me.post("/sign-out")
    async def sign_out_now(request: Request) -> Response:
        if not csrf_ok(request, (await _form(request)).get("csrf")):
            raise HTTPException(403, "sign out from the arena's own page")
        response = RedirectResponse(SIGN_IN, status_code=303)
        sign_out(response)
        return response

    @me.get("")
    async def home(request: Request) -> Response:
        site: WebSite = request.app.state.site
        bot = await current_bot(request)
        listed = await site.read(entrant_data.matches, site.db, bot.id)
        token = csrf_token(request)
        return _with_csrf(request, page(request, "entrant.html", bot=bot, matches=listed,
                                        csrf=token, shown=entrant_data.MATCHES_SHOWN,
                                        games_page=entrant_data.GAMES_PAGE), token)

    @me.get("/matches/{match_id}")
    async def match(request: Request, match_id: MatchId) -> Response:
        site: WebSite = request.app.state.site
        bot = await current_bot(request)
        info = await site.read(entrant_data.match, site.db, bot.id, match_id)
        token = csrf_token(request)
        return _with_csrf(request, page(request, "entrant_match.html", bot=bot, m=info,
                                        csrf=token), token)

    downloading: set[int] = set()  # bots with a download in progress: one at a time

    @me.get("/games.jsonl")
    async def games(request: Request) -> Response:
        site: WebSite = request.app.state.site
        bot = await current_bot(request)
        asked = _page_asked(request.query_params.get("after"),
                            request.query_params.get("limit"))
        if isinstance(asked, str):
            return _refused(400, asked)
        after, limit = asked
        if bot.id in downloading:
            return _refused(429, "a download of this bot's games is in progress: wait for "
                            "it to end, then ask again", {"Retry-After": "5"})
        downloading.add(bot.id)
        try:
            page = await site.read(entrant_data.games, site.db, bot.id, after, limit)
        except NotFound as exc:
            downloading.discard(bot.id)
            return _refused(404, str(exc))
        except BaseException:
            downloading.discard(bot.id)
            raise

        async def chunks() -> AsyncIterator[str]:
            try:
                while chunk := await site.read(some_lines, page.lines):  # in the web's threads
                    yield chunk
            except StorageError as exc:  # the status went out already: say so in the file
                yield json.dumps({"error": f"{exc}; this file is incomplete"}) + "\n"

        headers = {"Cache-Control": "no-store", "Content-Disposition":
                   f'attachment; filename="{_file_name(bot)}-games{_page_name(after)}.jsonl"'}
        if page.last is not None:
            headers["Link"] = f'<{_next_page(page.last, limit)}>; rel="next"'
        return _Download(chunks(), on_end=lambda: downloading.discard(bot.id),
                         media_type="application/jsonl", headers=headers)

    return me


class _Download(StreamingResponse):
    """A streamed download that calls `on_end` once it is over: sent whole, cut off by
    the client, or failed."""

    def __init__(self, content: AsyncIterator[str], on_end: Callable[[], None],
                 **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.on_end = on_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_end()


def _page_asked(after: str | None, limit: str | None) -> tuple[str | None, int] | str:
    """The page a download asks for (`?after=MATCH_ID&limit=N`): (after, limit), or why
    it cannot be served (one line)."""
    if after is not None and not (0 < len(after) <= MAX_TEXT and after.isprintable()):
        return "after must be the id of one of your matches"
    if limit is None:
        return after, entrant_data.GAMES_PAGE
    if not (limit.isascii() and limit.isdigit() and len(limit) <= 6
            and 1 <= int(limit) <= entrant_data.GAMES_PAGE):
        return f"limit must be a whole number from 1 to {entrant_data.GAMES_PAGE}"
    return after, int(limit)


def _next_page(last: str, limit: int) -> str:
    """The address of the page after the one that ends with match `last`."""
    return f"/me/games.jsonl?{urlencode({'after': last, 'limit': limit})}"


def _page_name(after: str | None) -> str:
    """What a file name adds for a page that does not start at the first game."""
    return "" if after is None else "-after-" + _file_safe(after)


def _refused(status: int, why: str, headers: dict[str, str] | None = None) -> Response:
    """A download refused, in one line of plain text."""
    return Response(why + "\n", status, headers=headers, media_type="text/plain")


async def _form(request: Request) -> dict[str, str]:
    """A posted form's fields (application/x-www-form-urlencoded; the first value of
    each; the body is at most 16 KiB: `limits.BodyLimit`)."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    return {name: values[0] for name, values in fields.items()}


def _file_name(bot: BotInfo) -> str:
    """The bot's name as a file name."""
    return _file_safe(bot.name) or "bot"


def _file_safe(text: str) -> str:
    """`text` as part of a file name (letters, digits, '-', '_', '.'; others '_')."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in text)


def not_signed_in(request: Request) -> Response:
    """A page without a valid session: to the sign-in form (the download: 401)."""
    if request.url.path.endswith(".jsonl"):
        return Response("sign in first (a rotated token ends the session)\n", 401,
                        media_type="text/plain")
    return RedirectResponse(SIGN_IN, status_code=303)
