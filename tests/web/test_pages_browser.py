"""The arena's web pages in a real headless Chromium, against a running arena: `cfarena
serve --http-port` on PostgreSQL with the four sample bots dialing in and playing.

The leaderboard updates as matches finish (no reload), a live match is followed to its
end (the page turns itself into the finished view), the bot and match pages show what
the contract (docs/WEB.md) names, every page reads at 1400x900 and at a phone's 390x844
(no horizontal overflow), and any console error or uncaught error fails the test.
Screenshots of each page at both sizes are kept in the artefacts directory
(tests/browser.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Browser, Page
from playwright.sync_api import Error as PlaywrightError

from cfarena.server.storage import MatchPlan, StoredMatch, open_database
from tests.browser import DESKTOP, PHONE, Watched, watched_page
from tests.harness.postgres import PgCluster
from tests.harness.serve import SAMPLES

from .arena import WebArena
from .live_arena import POOL, get_json, live_arena

pytestmark = [pytest.mark.browser, pytest.mark.postgres]
_T = TypeVar("_T")
TILE = re.compile(r"\b\d{1,2}-\d{1,2}\b")  # a tile written as text: "3-5"


@pytest.fixture(scope="module")
def arena(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[WebArena]:
    db = pg_cluster.create_database("web_pages_browser")
    with live_arena(tmp_path_factory.mktemp("arena"), db, montecarlo_pauses=True) as running:
        running.wait("a finished match and a running one",
                     lambda: bool(_finished(running) and _running(running)), 60)
        yield running
    # whatever the pages asked (and its stop with viewers connected), serve logged no
    # traceback
    assert "Traceback" not in running.err(), running.err()[-5000:]


def _finished(arena: WebArena) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = get_json(arena, "/api/matches?status=finished&limit=50")
    return rows


def _running(arena: WebArena) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = get_json(arena, "/api/matches?status=running&limit=50")
    return rows


def _match_id(row: dict[str, Any]) -> str:
    return str(row["id"])


def _settled(page: Page, check: Callable[[], _T]) -> _T:
    """`check()`, again on the new page if the page navigated meanwhile: a live match's
    page reloads itself into the finished view when its match ends."""
    for attempt in range(3):
        try:
            return check()
        except PlaywrightError as exc:
            if "Execution context was destroyed" not in str(exc) or attempt == 2:
                raise
            page.wait_for_load_state("load")
    raise AssertionError("unreachable")


def _no_overflow(page: Page) -> None:
    """The page fits its window: no horizontal scrolling of the document."""
    width = page.evaluate("innerWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: {scroll} px wide in a {width} px window"


def _leaderboard(page: Page) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = page.evaluate("""() => Object.fromEntries(
        Array.from(document.querySelectorAll('#leaderboard tr[data-bot]')).map(r => [
            r.dataset.bot, Object.fromEntries(Array.from(r.querySelectorAll('td[data-col]'))
                .map(td => [td.dataset.col, td.textContent.trim()]))]))""")
    return rows


COLUMNS = {"rank", "bot", "version", "rating", "check", "games", "win-share",
           "points-per-round", "faults", "presence"}


def test_the_leaderboard_updates_live_as_matches_finish(arena: WebArena, page: Watched
                                                        ) -> None:
    p = page.page
    response = p.goto(f"{arena.base}/?pool={POOL}", wait_until="load")
    assert response is not None and response.status == 200
    rows = _leaderboard(p)
    assert set(rows) == set(SAMPLES), rows
    for name, cells in rows.items():
        assert set(cells) == COLUMNS, cells
        assert cells["bot"] == name
        assert int(cells["games"]) >= 0
    ranks = [int(c["rank"]) for c in rows.values()]  # in the table's order
    assert ranks[0] == 1 and ranks == sorted(ranks), ranks
    # bot names link to their pages
    for name in SAMPLES:
        link = p.locator(f'#leaderboard tr[data-bot="{name}"] a[href="/bots/{name}"]')
        assert link.count() >= 1, name
    counter = p.locator("#finished-count")
    before = int(counter.get_attribute("data-count") or "-1")
    assert before >= 1
    games_before = sum(int(c["games"]) for c in rows.values())
    running_before = p.evaluate("""Array.from(document.querySelectorAll(
        '#running li[data-match]')).map(li => li.dataset.match)""")
    page.screenshot("leaderboard-desktop")
    p.evaluate("window.__notReloaded = true")
    # matches finish: the count and the table follow without a reload
    p.wait_for_function(f"+document.querySelector('#finished-count').dataset.count > {before}",
                        timeout=40_000)
    p.wait_for_function(f"""Array.from(document.querySelectorAll(
        '#leaderboard tr[data-bot] td[data-col=games]')).reduce((s, td) =>
        s + +td.textContent, 0) > {games_before}""", timeout=20_000)
    # every finished match is a game for each of its four bots: the table and the count
    # come to agree
    p.wait_for_function("""Array.from(document.querySelectorAll(
        '#leaderboard tr[data-bot] td[data-col=games]')).reduce((s, td) =>
        s + +td.textContent, 0) === 4 * +document.querySelector('#finished-count')
        .dataset.count""", timeout=20_000)
    # a match that started after the page loaded shows up in the running list
    p.wait_for_function(f"""Array.from(document.querySelectorAll('#running li[data-match]'))
        .some(li => !{json.dumps(running_before)}.includes(li.dataset.match))""",
                        timeout=20_000)
    assert p.evaluate("window.__notReloaded") is True
    after = int(counter.get_attribute("data-count") or "-1")
    assert after > before
    # what the page shows agrees with the API
    board = get_json(arena, f"/api/leaderboard?pool={POOL}")
    assert board["finished"] >= after
    api = {r["bot"]: r for r in board["rows"]}
    shown = _leaderboard(p)
    for name in SAMPLES:
        assert int(shown[name]["games"]) <= int(api[name]["games"])
    # the running matches are listed, each linking to its page
    unlinked = p.evaluate("""() => Array.from(document.querySelectorAll(
        '#running li[data-match]')).filter(li =>
        !li.querySelector(`a[href="/matches/${li.dataset.match}"]`)).map(li => li.outerHTML)""")
    assert unlinked == []
    page.check()


# Every server-sent event the page consumes, handed to the test as it arrives (the page
# reloads itself when its match ends, so nothing is kept in the page), and counted in
# the page (what it shows at a moment is the result of its first cfCount messages).
RECORD_SSE = """(() => {
  const add = EventSource.prototype.addEventListener;
  EventSource.prototype.addEventListener = function (type, listener, ...rest) {
    const url = this.url;
    return add.call(this, type, (e) => {
      window.cfCount = (window.cfCount || 0) + 1;  // messages handled by this page so far
      window.cfSeen(url, type, String(e.data));
      return listener(e);
    }, ...rest);
  };
})()"""
PUBLIC_KINDS = {"round_start", "draw_off", "centre", "play"}  # events whose tile is public


def _public_tiles(log: dict[str, Any]) -> dict[int, set[str]]:
    """Per round, the tiles everyone saw in it: the round double, draw-offs, plays."""
    public: dict[int, set[str]] = {}
    for event in log["events"]:
        if event["kind"] in PUBLIC_KINDS:
            public.setdefault(event["round"], set()).add(str(event["tile"]))
    return public


def test_a_live_match_is_followed_to_its_end(arena: WebArena, page: Watched) -> None:
    p = page.page
    received: list[tuple[str, str, str]] = []
    p.expose_function("cfSeen", lambda url, kind, data: received.append((url, kind, data)))
    p.add_init_script(RECORD_SSE)
    match = ""
    for _ in range(3):  # the latest running match (it may end before the page opens)
        arena.wait("a running match", lambda: bool(_running(arena)), 30)
        latest = max(_running(arena), key=lambda row: str(row["started_at"] or ""))
        match = _match_id(latest)
        received.clear()  # cfCount counts from this page load on
        p.goto(f"{arena.base}/matches/{match}", wait_until="load")
        if p.get_attribute("main", "data-status") == "running":
            break
    main = p.locator("main")
    assert main.get_attribute("data-status") == "running"
    assert p.locator("#live").is_visible()
    sizes = p.evaluate("""Array.from(document.querySelectorAll('#live-hands [data-seat]'))
        .map(e => +e.dataset.handSize)""")
    assert len(sizes) == 4 and all(0 <= n <= 15 for n in sizes), sizes
    assert int(p.get_attribute("#live-boneyard", "data-count") or "-1") >= 0
    # public events arrive as they happen
    p.wait_for_function("document.querySelectorAll('#live-events li').length > 0",
                        timeout=20_000)
    first = p.locator("#live-events li").count()
    # (messages received by then, html, layout text, hands text) while the match runs
    shown: list[tuple[int, str, str, str]] = []
    p.wait_for_function(f"document.querySelectorAll('#live-events li').length > {first} "
                        "|| document.querySelector('main').dataset.status !== 'running'",
                        timeout=20_000)
    assert main.get_attribute("data-status") == "running", "the match ended too soon"
    page.screenshot("live-match-desktop")
    # the tiles on the table, as text or as titles/labels of drawn tiles
    count, html, layout, hands = p.evaluate("""[window.cfCount,
        document.documentElement.outerHTML,
        [document.querySelector('#live-layout'),
         ...document.querySelectorAll('#live-layout [title], #live-layout [aria-label]')]
        .map(e => e.innerText + ' ' + (e.title || '') + ' ' +
                  (e.getAttribute('aria-label') || '')).join(' '),
        document.querySelector('#live-hands').innerText]""")
    shown.append((count, html, layout, hands))
    # hand sizes only: no tile of any hand is on the page
    assert p.locator("#live-hands [data-tile]").count() == 0
    assert not TILE.search(hands), hands
    # the match ends: the page switches to the finished view by itself (the test does
    # not navigate; the page may reload itself to the server-rendered view)
    p.wait_for_function("document.querySelector('main')?.dataset.status === 'finished'",
                        timeout=60_000)
    assert p.url == f"{arena.base}/matches/{match}"
    p.locator("#result").wait_for(state="visible", timeout=10_000)
    placings = p.locator("#result").inner_text()
    assert all(name in placings for name in SAMPLES), placings
    page.check()

    # What the page was sent while the match ran, checked against the game log: only
    # tiles that had been seen by everyone in their round, never a drawn tile, never
    # the seed.
    detail = get_json(arena, f"/api/matches/{match}")
    assert detail["status"] == "finished" and detail["revealed"] is True
    seed = str(detail["seed"])
    public = _public_tiles(get_json(arena, f"/api/matches/{match}/log"))
    def is_live(url: str) -> bool:
        return url.endswith(f"/api/matches/{match}/live")

    live = [(kind, data) for url, kind, data in received if is_live(url)]
    updates = [json.loads(data) for kind, data in live if kind in ("snapshot", "update")]
    assert len(updates) >= 2, live[:3]
    for message in updates:
        now = public[message["round"]]
        assert {n["tile"] for n in message["layout"]} <= now, message
        assert message["round_double"] in now
        assert sorted(message["hand_sizes"]) and not {"hands", "seed", "boneyard_tiles",
                                                      "log"} & set(message)
        for event in message["events"]:
            if event["kind"] == "draw":
                assert event["tile"] is None, event
            elif event["tile"] is not None:
                assert event["tile"] in public[event["round"]], event
    everything = [data for _kind, data in live] + [html for _n, html, _l, _h in shown]
    assert all(seed not in text for text in everything)
    for count, _html, layout, _hands in shown:  # the layout on the page: its round's tiles
        last = [json.loads(d) for u, k, d in received[:count]
                if is_live(u) and k in ("snapshot", "update")][-1]
        tiles = set(TILE.findall(layout))
        assert tiles and tiles <= public[last["round"]], layout


def test_a_finished_match_page(arena: WebArena, page: Watched) -> None:
    p = page.page
    match = _match_id(_finished(arena)[0])
    detail = get_json(arena, f"/api/matches/{match}")
    p.goto(f"{arena.base}/matches/{match}", wait_until="load")
    assert p.get_attribute("main", "data-status") == "finished"
    placings = p.locator("#result").inner_text()
    assert all(name in placings for name in SAMPLES), placings
    for seat in detail["seats"]:  # each bot's points are shown
        assert str(seat["total"]) in placings, (seat, placings)
    # a heading, one row per round, the totals
    assert p.locator("#round-scores tr").count() == len(detail["round_scores"]) + 2
    frame_el = p.locator("iframe#replay")
    assert frame_el.get_attribute("src") == f"/matches/{match}/replay"
    p.frame_locator("iframe#replay").locator("#layout").wait_for(timeout=10_000)
    handle = frame_el.element_handle()
    replay = handle.content_frame() if handle is not None else None
    assert replay is not None
    assert replay.evaluate("typeof cfReplay") == "object"
    assert replay.evaluate("cfReplay.frames") > 10
    assert str(detail["seed"]) in (replay.text_content("#meta") or "")
    page.screenshot("match-finished-desktop")
    page.check()  # the replay frame's console counts too


def test_a_bot_page(arena: WebArena, page: Watched) -> None:
    p = page.page
    p.goto(f"{arena.base}/bots/montecarlo", wait_until="load")
    chart = p.locator("#rating-chart svg, svg#rating-chart")
    assert chart.count() == 1
    assert chart.locator("path, polyline, circle").count() >= 1
    assert p.locator("#versions tr").count() >= 2  # a heading and a version
    recent = p.locator("#recent-matches tr[data-match]")
    assert recent.count() >= 1
    first = recent.first.get_attribute("data-match")
    assert recent.first.locator(f'a[href="/matches/{first}"]').count() >= 1
    assert p.locator("#faults").count() == 1
    latency = p.locator("#latency").inner_text()
    assert re.search(r"\d", latency), latency
    page.screenshot("bot-desktop")
    page.check()
    # an unknown bot: a 404 page, not a traceback
    response = p.goto(f"{arena.base}/bots/no-such-bot", wait_until="load")
    assert response is not None and response.status == 404
    body = p.locator("body").inner_text()
    assert "Traceback" not in body and "no-such-bot" in body
    # the browser logs the 404 response itself as a console error; nothing else
    assert all("404" in e for e in page.errors), page.errors
    page.errors.clear()


def test_the_live_page_lists_running_matches(arena: WebArena, page: Watched) -> None:
    p = page.page
    arena.wait("a running match", lambda: bool(_running(arena)), 30)
    p.goto(f"{arena.base}/live", wait_until="load")
    # counted in the page at the moment one is listed: the list is live, and the match
    # may end (and leave it) before a second look (ci41: one was seen, then none)
    listed = p.wait_for_function(
        "() => document.querySelectorAll('a[href^=\"/matches/\"]').length || false",
        timeout=15_000).json_value()
    assert isinstance(listed, int) and listed >= 1, listed
    page.check()


def _tournament(arena: WebArena) -> int:
    """A tournament of two matches in the arena's database, one of them played (as
    workers elsewhere would store it): what the tournament pages show."""
    with open_database(arena.db) as db:
        listed = db.list_tournaments()
        if listed:
            return listed[0].id
        ids = {b.name: b.id for b in db.list_bots()}
        seats = [ids[name] for name in SAMPLES]
        tid = db.create_tournament("final round-robin", {
            "seed": 1, "players": 4, "games": 1, "rules": {"preset": "standard"},
            "bots": [{"name": name, "command": None} for name in SAMPLES]})
        plans = [MatchPlan(f"t0-g0-r{r}", 7, {"preset": "standard"}, 4,
                           seats[r:] + seats[:r], pool="test/final") for r in range(2)]
        first, _second = db.schedule_matches(tid, plans)
        db.mark_running(first)
        db.record_match(StoredMatch(first, round_scores=[[3, 0, 9, 14]], totals=[3, 0, 9, 14],
                                    ranks=[2, 1, 3, 4]))
        return tid


def _pages(arena: WebArena) -> dict[str, str]:
    finished = _match_id(_finished(arena)[0])
    tournament = _tournament(arena)
    arena.wait("a running match", lambda: bool(_running(arena)), 30)
    latest = max(_running(arena), key=lambda row: str(row["started_at"] or ""))
    running = _match_id(latest)  # the latest: least likely to end while it is looked at
    return {"leaderboard": "/", "bot": "/bots/smart", "match-finished": f"/matches/{finished}",
            "match-live": f"/matches/{running}", "live": "/live",
            "tournaments": "/tournaments", "tournament": f"/tournaments/{tournament}"}


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_fits_the_window(arena: WebArena, browser: Browser,
                                    size: tuple[int, int]) -> None:
    phone = size == PHONE
    label = "phone" if phone else "desktop"
    # a page of its own for each path: a live match's page reloads itself into the
    # finished view when its match ends, and that navigation, landing as the next path
    # was asked for, aborted it (net::ERR_ABORTED, seen once on a loaded machine)
    for name, path in _pages(arena).items():
        with watched_page(browser, size, phone=phone) as page:
            response = page.page.goto(arena.base + path, wait_until="load")
            assert response is not None and response.status == 200, path
            assert _settled(page.page, lambda: page.page.evaluate("innerWidth")) == size[0]
            _settled(page.page, lambda: _no_overflow(page.page))
            if name == "leaderboard":  # the columns that rank bots are in sight
                outside = page.page.evaluate("""() => Array.from(document.querySelectorAll(
                    '#leaderboard td[data-col=rank], #leaderboard td[data-col=bot],' +
                    '#leaderboard td[data-col=rating], #leaderboard td[data-col=games]'))
                    .map(td => [td.dataset.col, td.getBoundingClientRect()])
                    .filter(([c, r]) => r.left < 0 || r.right > innerWidth)
                    .map(([c, r]) => `${c}: ${r.left}-${r.right}`)""")
                assert outside == [], (label, outside)
            if name == "tournament":  # its progress and standings, as stored
                progress = page.page.locator("#progress")
                assert progress.get_attribute("data-finished") == "1"
                assert progress.get_attribute("data-total") == "2"
                assert page.page.locator("#standings tr[data-bot]").count() == len(SAMPLES)
                # the head-to-head matrix: every pair of its one match met once
                assert page.page.locator("#matrix tr[data-bot]").count() == len(SAMPLES)
                met = page.page.locator("#matrix td[data-matches='1']")
                assert met.count() == len(SAMPLES) * (len(SAMPLES) - 1)
            shot = page.screenshot(f"{name}-{label}")
            assert shot.stat().st_size > 8_000  # a blank page is a few kB
            page.check()

