"""The leaderboard tells one story, in a real headless Chromium at desktop and phone
widths, against the web app served in-process on a real SQLite file (no referee: the
arena's presence is a stand-in holding who is connected): the rating that orders the
table is the one shown large, the Bradley-Terry check only as a place; each bot's
presence (connected and waiting for more players, last seen with its last error,
revoked, a connected bot with no match yet); the same rows in the same order as
`cfarena standings`; a stored match updates the rows in place; the bot page's rating
chart marks where each version starts, and its recent matches are newest first.
Screenshots are kept in the artefacts directory (tests/browser.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from cfarena.server.storage import StoredMatch, open_database
from tests.browser import DESKTOP, PHONE, watched_page
from tests.cli.helpers import run_in_process

from .inprocess import served_site
from .leaderboard_data import GAMES, POOL, fill, play

pytestmark = pytest.mark.browser


@dataclass
class _Arena:
    """What the web asks of a running arena: who is dialled in, how many seats a table
    has (`web.site.Ladder`)."""

    connected: frozenset[str]
    players: int = 4
    paused: bool = False

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def connected_bots(self) -> frozenset[str]:
        return self.connected


def _rows(page: Page) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = page.evaluate("""() =>
        Array.from(document.querySelectorAll('#leaderboard tr[data-bot]')).map(r => ({
            ...Object.fromEntries(Array.from(r.querySelectorAll('td[data-col]'))
                .map(td => [td.dataset.col, td.textContent.replace(/\\s+/g, ' ').trim()])),
            bot: r.dataset.bot, state: r.dataset.presence}))""")
    return rows


def _font_px(page: Page, selector: str) -> float:
    return float(page.eval_on_selector(selector, "e => getComputedStyle(e).fontSize")[:-2])


def test_the_leaderboard_tells_one_story(tmp_path: Path, browser: Browser) -> None:
    db_url = f"sqlite:///{tmp_path / 'arena.db'}"
    fill(db_url)
    cli = run_in_process("standings", "--pool", POOL, "--ladder", "--json", "--db", db_url,
                         cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    expected = [(r["bot"], str(r["rank"]), str(r["rating"]), f"#{r['check_rank']}",
                 str(r["games"]), f"{round(100 * r['win_share'])}%")
                for r in json.loads(cli.stdout)]
    arena = _Arena(frozenset({"alice", "erin"}))
    with served_site(db_url, ladder=arena) as (port, site, loop):
        base = f"http://127.0.0.1:{port}"
        for size, phone, name in [(DESKTOP, False, "desktop"), (PHONE, True, "phone")]:
            with watched_page(browser, size, phone=phone) as watched:
                page = watched.page
                response = page.goto(f"{base}/", wait_until="load")
                assert response is not None and response.status == 200
                rows = _rows(page)
                ranked = [r for r in rows if r["rank"] != "–"]
                # the same rows, in the same order and with the same numbers, as the CLI
                assert [(r["bot"], r["rank"], r["rating"], r["check"], r["games"],
                         r["win-share"]) for r in ranked] == expected
                ratings = [int(r["rating"]) for r in ranked]  # the shown rating orders
                assert ratings == sorted(ratings, reverse=True), ratings
                shown = {r["bot"]: r for r in rows}
                # presence: 2 of a table's 4 are connected, so both wait for 2 more
                for bot in ("alice", "erin"):
                    assert shown[bot]["state"] == "waiting", shown[bot]
                    assert "waiting for 2 more players" in shown[bot]["presence"]
                assert shown["bob"]["state"] == "away" and "last seen" in shown["bob"][
                    "presence"]
                assert (shown["erin"]["rank"], shown["erin"]["rating"]) == ("–", "new")
                assert rows[-1]["bot"] == "erin"  # unranked, after the ranked ones
                assert shown["dave"]["state"] == "revoked"
                assert page.locator('#leaderboard tr[data-bot="dave"] .badge.revoked'
                                    ).count() == 1
                carol = page.inner_text('#leaderboard tr[data-bot="carol"] '
                                        "td[data-col=presence]")
                assert shown["carol"]["state"] == "away" and "last seen" in carol
                assert "last error: timeout" in carol, carol
                assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", carol), carol
                # the rating is the large number; the check a small, muted place
                assert _font_px(page, '#leaderboard td[data-col=rating]') > 1.2 * _font_px(
                    page, '#leaderboard td[data-col=check]')
                assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
                watched.screenshot(f"leaderboard-presence-{name}")
                watched.check()
            with watched_page(browser, size, phone=phone) as watched:
                _bot_page(watched.page, f"{base}/bots/alice")
                watched.screenshot(f"bot-versions-{name}")
                watched.check()
        # a stored match updates the rows in place (the same template renders them)
        with watched_page(browser) as watched:
            page = watched.page
            page.goto(f"{base}/", wait_until="load")
            page.wait_for_selector("#live-status.on")
            before = {r["bot"]: r for r in _rows(page)}
            with open_database(db_url) as db:
                ids = {b.name: b.id for b in db.list_bots()}
                play(db, "m9", [ids[n] for n in ("bob", "alice", "carol", "erin")],
                      (1, 2, 3, 4), ["", "2", "", ""], [])
            loop.call_soon_threadsafe(site.hub.stored, StoredMatch("m9"))
            page.wait_for_function("""() => document.querySelector(
                '#leaderboard tr[data-bot="erin"] td[data-col=rank]').textContent.trim()
                !== '–'""", timeout=20_000)
            after = {r["bot"]: r for r in _rows(page)}
            assert int(after["bob"]["games"]) == int(before["bob"]["games"]) + 1
            assert after["erin"]["rating"] != "new"
            assert page.evaluate("window.performance.getEntriesByType('navigation').length"
                                 ) == 1  # no reload
            watched.check()


def _bot_page(page: Page, url: str) -> None:
    """Alice's page: her rating chart marks where each of her two versions starts (its
    line is not drawn across the change), her recent matches are newest first."""
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200
    labels = page.eval_on_selector_all("#rating-chart .mark-label",
                                       "els => els.map(e => e.textContent)")
    assert labels == ["version 1", "version 2"]
    assert page.locator("#rating-chart polyline").count() == 2
    assert page.locator("#rating-chart .mark").count() == 2
    started = page.eval_on_selector_all(
        "#recent-matches tr[data-match] time", "els => els.map(e => e.dateTime)")
    assert len(started) == len(GAMES) and started == sorted(started, reverse=True)
    ids = page.eval_on_selector_all("#recent-matches tr[data-match]",
                                    "els => els.map(e => e.dataset.match)")
    assert ids == [f"m{i}" for i in reversed(range(len(GAMES)))]  # played in that order
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
