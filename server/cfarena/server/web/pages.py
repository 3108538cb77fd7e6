"""The HTML pages (server-rendered Jinja2 templates; `static/live.js` updates them
from the server-sent events). Stable hooks for tests: the ids and data-* attributes
of docs/WEB.md."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from cfarena.server.web import sprt_tests as sprt_view
from cfarena.server.web import tournaments as tournament_view
from cfarena.server.web.chart import rating_chart
from cfarena.server.web.data import NotFound
from cfarena.server.web.params import BotName, MatchId, PoolQuery, SprtTestId, TournamentId
from cfarena.server.web.site import WebSite

TEMPLATES = Jinja2Templates(directory=str(__import__("pathlib").Path(__file__).parent
                                          / "templates"))


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _when(value: str | None) -> Markup:
    """An ISO 8601 UTC time as `<time>2026-12-03 15:55:46 UTC</time>` (never wrapped)."""
    if not value:
        return Markup("–")
    text = value.replace("T", " ").removesuffix("+00:00") + " UTC"
    return Markup('<time datetime="{}">{}</time>').format(value, text)


def _reason(value: str | None, rounds: int = 0) -> str:
    """Why a match ended, in words ("rounds_played" -> "all 10 rounds played")."""
    if not value:
        return ""
    if value == "rounds_played":
        return f"all {rounds} rounds played" if rounds else "all rounds played"
    return value.replace("_", " ")


TEMPLATES.env.filters["fmt"] = _fmt
TEMPLATES.env.filters["pct"] = _pct
TEMPLATES.env.filters["when"] = _when
TEMPLATES.env.filters["reason"] = _reason


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    site: WebSite = request.app.state.site
    return TEMPLATES.TemplateResponse(request, name, {"pool": site.pool, **context},
                                      status_code=status)


def make_router() -> APIRouter:
    pages = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)

    @pages.get("/")
    async def leaderboard(request: Request, pool: PoolQuery = None) -> Response:
        site: WebSite = request.app.state.site
        shown = pool or site.pool
        board = await site.read(site.data.leaderboard, shown, *site.presence(shown))
        running = await site.read(site.data.running)
        return page(request, "leaderboard.html", board=board, running=running,
                    shown_pool=shown)

    @pages.get("/leaderboard/rows")
    async def leaderboard_rows(request: Request, pool: PoolQuery = None) -> Response:
        """The leaderboard's table body alone: what the page's live updates swap in (one
        template renders the rows, first and on every update)."""
        site: WebSite = request.app.state.site
        shown = pool or site.pool
        board = await site.read(site.data.leaderboard, shown, *site.presence(shown))
        return page(request, "leaderboard_rows.html", board=board)

    @pages.get("/live")
    async def live(request: Request) -> Response:
        site: WebSite = request.app.state.site
        running = await site.read(site.data.running)
        return page(request, "live.html", running=running)

    @pages.get("/tournaments")
    async def tournaments(request: Request) -> Response:
        site: WebSite = request.app.state.site
        listed = await site.read(tournament_view.tournaments, site.db)
        return page(request, "tournaments.html", tournaments=listed)

    @pages.get("/tournaments/{tournament_id}")
    async def tournament(request: Request, tournament_id: TournamentId) -> Response:
        site: WebSite = request.app.state.site
        info = await site.read(tournament_view.tournament, site.db, tournament_id)
        return page(request, "tournament.html", t=info)

    @pages.get("/sprt/{test_id}")
    async def sprt_test(request: Request, test_id: SprtTestId) -> Response:
        site: WebSite = request.app.state.site
        info = await site.read(sprt_view.sprt_test, site.db, test_id)
        trace = info["trace"]
        chart = rating_chart([p["llr"] for p in trace],
                             [f"group {p['group'] + 1}, score {p['score']:.3f}"
                              for p in trace], "LLR after each deal group", unit="group",
                             levels=(info["lower"], info["upper"]), digits=2)
        return page(request, "sprt_test.html", t=info, chart=Markup(chart))

    @pages.get("/bots/{name}")
    async def bot(request: Request, name: BotName, pool: PoolQuery = None) -> Response:
        site: WebSite = request.app.state.site
        info = await site.read(site.data.bot, name, pool or site.pool)
        history = info["rating_history"]
        chart = rating_chart([p["rating"] for p in history],
                             [f"match {p['number']}, version {p['version'] or '-'}"
                              for p in history],
                             marks=[(i, f"version {p['version'] or '-'}")
                                    for i, p in enumerate(history)
                                    if i == 0 or p["version"] != history[i - 1]["version"]])
        return page(request, "bot.html", info=info, chart=Markup(chart))

    @pages.get("/matches/{match_id}")
    async def match(request: Request, match_id: MatchId) -> Response:
        site: WebSite = request.app.state.site
        info = await site.read(site.data.match, match_id)
        return page(request, "match.html", match=info,
                    by_seat=sorted(info["seats"], key=lambda s: s["seat"]))

    @pages.get("/matches/{match_id}/replay")
    async def replay(request: Request, match_id: MatchId) -> Response:
        site: WebSite = request.app.state.site
        text = await site.read(site.data.replay_html, match_id)
        if text is None:
            return page(request, "message.html", status=409, title="Replay not available yet",
                        message="The replay is shown once every match with this deal is over.")
        return HTMLResponse(text)

    return pages


def not_found_page(request: Request, exc: NotFound) -> Response:
    return page(request, "message.html", status=404, title="Not found", message=str(exc))
