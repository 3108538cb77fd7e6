"""The entrant's pages in a real headless Chromium at desktop and phone widths, against
the web app served in-process on a real SQLite file holding a 2-player tournament: sign
in with a tournament entrant's web key (a wrong key is refused), the matches listed by
the ids the bot was told, a match's output and its turns (offered moves with the chosen
one marked, times), the download of all games, sign-out. Screenshots are kept in the
artefacts directory (tests/browser.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from cfarena.server.credentials import hash_token
from cfarena.server.storage import open_database
from tests.browser import DESKTOP, PHONE, watched_page
from tests.web.entrant_games import DEAL_SEED, Tournament, output_marker, store_tournament

from .inprocess import served_site

pytestmark = pytest.mark.browser
KEY = "alpha-web-key-for-the-browser-test-0123"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Tournament]]:
    path = tmp_path_factory.mktemp("entrant-browser") / "arena.db"
    url = f"sqlite:///{path}"
    with open_database(url) as db:
        t = store_tournament(db)
        db.rotate_token("alpha", hash_token(KEY), t.id)
    with served_site(url) as (port, _site, _loop):
        yield f"http://127.0.0.1:{port}", t


def _no_overflow(page: Page) -> None:
    width = page.evaluate("innerWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: {scroll} px wide in a {width} px window"


def _sign_in(page: Page, base: str, key: str) -> int:
    page.goto(base + "/me")
    assert page.url == base + "/me/sign-in"
    page.fill("#token", key)
    with page.expect_response(base + "/me/sign-in") as answer:
        page.click("#sign-in button[type=submit]")
    page.wait_for_load_state()
    return answer.value.status


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_an_entrant_signs_in_reads_its_turns_downloads_and_signs_out(
        served: tuple[str, Tournament], browser: Browser, size: tuple[int, int],
        tmp_path: Path) -> None:
    base, t = served
    label = "phone" if size == PHONE else "desktop"
    with watched_page(browser, size, phone=size == PHONE) as watched:
        page = watched.page
        assert _sign_in(page, base, "not-the-key") == 401
        assert "No bot has this token" in page.inner_text("#sign-in-error")
        assert page.context.cookies() == [c for c in page.context.cookies()
                                          if c["name"] != "cfarena_entrant"]
        watched.errors.clear()  # the browser logs the 401 itself
        _no_overflow(page)
        watched.screenshot(f"entrant-sign-in-{label}")

        assert _sign_in(page, base, KEY) == 303
        assert page.url == base + "/me"
        session = next(c for c in page.context.cookies() if c["name"] == "cfarena_entrant")
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        assert session["path"] == "/me"
        assert page.evaluate("document.cookie") == ""  # no script reads it
        rows = page.locator("#entrant-matches tr[data-match]")
        assert rows.count() == 2
        assert {rows.nth(i).get_attribute("data-bot-match") for i in range(2)} == {
            t.wire_id(t.first), t.wire_id(t.second)}
        _no_overflow(page)
        watched.screenshot(f"entrant-matches-{label}")

        page.click(f"#entrant-matches tr[data-match='{t.first}'] a")
        page.wait_for_load_state()
        assert page.inner_text("#bot-match-id") == t.wire_id(t.first)
        assert output_marker("alpha", t.first) in page.inner_text("pre.output")
        assert str(DEAL_SEED) not in page.content()
        log = t.logs[t.first]
        decisions = [a for a in log["actions"] if a["seat"] == 0 and "turn_id" in a]
        turns = page.locator("table.turns[data-seat='0'] tr[data-turn]")
        assert turns.count() == len(decisions) > 0
        for i in (0, len(decisions) - 1):
            row = turns.nth(i)
            assert row.locator("code.move.chosen").inner_text() == decisions[i]["move"]
            assert row.locator("code.chosen-move").inner_text() == decisions[i]["move"]
        _no_overflow(page)
        watched.screenshot(f"entrant-match-{label}")

        with page.expect_download() as download:
            page.click("#download")
        saved = tmp_path / "games.jsonl"
        download.value.save_as(saved)
        records = [json.loads(line) for line in saved.read_text().splitlines()]
        assert [(r["match_id"], r["bot_match_id"], r["seed"]) for r in records] == [
            (t.first, t.wire_id(t.first), None)]
        assert len(records[0]["views"][0]["turns"]) == len(decisions)

        page.click("#sign-out button")
        page.wait_for_load_state()
        assert page.url == base + "/me/sign-in"
        page.goto(base + "/me")
        assert page.url == base + "/me/sign-in"
        watched.check()
