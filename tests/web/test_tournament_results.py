"""A tournament's results page: standings, the head-to-head cross-table and "download all
games", the JSON Lines `cfarena export --tournament` writes, streamed once the tournament
is finished (409 before). Over real HTTP from the web app served in-process
(tests/web/inprocess.py), and in Chromium at desktop and phone widths (screenshots kept
under tests/artifacts/). `cfarena publish` writes the same page as a static site, opened
from disk in Chromium."""

from __future__ import annotations

import dataclasses
import http.client
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import MatchPlan, TournamentStatus, hash_token, open_database
from cfarena.server.storage.match_writer import to_stored
from tests.browser import DESKTOP, PHONE, watched_page
from tests.cli.helpers import run_in_process
from tests.web.inprocess import request, web_app

RULES = {"preset": "standard", "rounds": "single"}
BOTS = ["alpha", "bravo", "charlie-the-third-bot"]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Tournament 1, finished: the three bots at 3-player tables, two deals in three
    rotations each; tournament 2, running, of one match not played yet."""
    tmp = tmp_path_factory.mktemp("results")
    url = f"sqlite:///{tmp / 'cfarena.db'}"
    with open_database(url) as db:
        ids = [db.register_bot(name, hash_token(f"token-{name}")).bot_id for name in BOTS]
        final = db.create_tournament("Final 2026", {
            "players": 3, "rules": RULES, "games": 2, "bots": [{"name": b} for b in BOTS]})
        plans = [MatchPlan(f"t0-g{g}-r{r}", 100 + g, RULES, 3, ids[r:] + ids[:r])
                 for g in range(2) for r in range(3)]
        for plan, match_id in zip(plans, db.schedule_matches(final, plans), strict=True):
            names = [BOTS[ids.index(b)] for b in plan.seat_bot_ids]
            record = simulate_record(RULES, 3, plan.seed, names=names)
            assert db.record_match(to_stored(dataclasses.replace(record, match_id=match_id)))
        db.set_tournament_status(final, TournamentStatus.FINISHED)
        other = db.create_tournament("still going", {"players": 3, "rules": RULES})
        db.schedule_matches(other, [MatchPlan("t0-g0-r0", 7, RULES, 3, ids)])
    return tmp, url


def test_all_games_download_as_export_writes_them(place: tuple[Path, str]) -> None:
    tmp, url = place
    exported = run_in_process("export", "--tournament", "1", "--db", url, cwd=tmp)
    assert exported.returncode == 0 and exported.stdout.count("\n") == 6
    with web_app(url) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", "/api/tournaments/1/games")
            reply = conn.getresponse()
            body = reply.read()
        finally:
            conn.close()
        assert reply.status == 200
        assert reply.getheader("Content-Type", "").startswith("application/jsonl")
        assert reply.getheader("Transfer-Encoding") == "chunked"  # streamed, no length
        assert 'filename="tournament-1-games.jsonl"' in reply.getheader(
            "Content-Disposition", "")
        assert body.decode("utf-8") == exported.stdout  # the same bytes
        assert request(port, "GET", "/api/tournaments/2/games")[0] == 409
        assert request(port, "GET", "/api/tournaments/9/games")[0] == 404
        page = request(port, "GET", "/tournaments/2")[1].decode()
        assert 'id="download-games"' not in page  # not finished: no link


def test_a_download_cut_by_a_bad_log_says_so_in_its_last_line(place: tuple[Path, str],
                                                                tmp_path: Path) -> None:
    """A stored log whose digest mismatches, met after the status went out: the file
    ends with an error line (never a silently shorter file that looks whole)."""
    source, _ = place
    shutil.copy(source / "cfarena.db", tmp_path / "cfarena.db")
    with sqlite3.connect(tmp_path / "cfarena.db") as conn:
        ids = [row[0] for row in conn.execute("SELECT match_id FROM game_logs ORDER BY match_id")]
        conn.execute("UPDATE game_logs SET sha256 = ? WHERE match_id = ?", ("0" * 64, ids[3]))
    with web_app(f"sqlite:///{tmp_path / 'cfarena.db'}") as port:
        status, body = request(port, "GET", "/api/tournaments/1/games")
    lines = body.decode("utf-8").splitlines()
    assert status == 200 and 1 <= len(lines) <= 6
    assert all("error" not in json.loads(line) for line in lines[:-1])
    last = json.loads(lines[-1])
    assert set(last) == {"error"} and last["error"].endswith("this file is incomplete")


def test_a_deal_dealt_again_by_a_match_not_over_is_left_out(place: tuple[Path, str],
                                                              tmp_path: Path) -> None:
    """A rerun of the final's first deal (seed 100), scheduled and not played: that deal's
    three logs are out of the download and of a published site (their replay pages too),
    until the rerun is over; the other deal's three are in."""
    source, _ = place
    shutil.copy(source / "cfarena.db", tmp_path / "cfarena.db")
    url = f"sqlite:///{tmp_path / 'cfarena.db'}"
    with open_database(url) as db:
        ids = [b.id for b in db.list_bots()]
        rerun = db.create_tournament("rerun", {"players": 3, "rules": RULES})
        db.schedule_matches(rerun, [MatchPlan("t0-g0-r0", 100, RULES, 3, ids)])
    with web_app(url) as port:
        status, body = request(port, "GET", "/api/tournaments/1/games")
    assert status == 200
    assert sorted(int(json.loads(line)["seed"]) for line in body.decode().splitlines()) == \
        [101] * 3
    site = tmp_path / "site"
    done = run_in_process("publish", "1", str(site), "--db", url, "--json", cwd=tmp_path)
    assert (json.loads(done.stdout)["matches"], json.loads(done.stdout)["left_out"]) == (3, 3)
    assert (site / "games.jsonl").read_bytes() == body
    assert len(list((site / "matches").iterdir())) == 3
    assert (site / "index.html").read_text().count('<a class="plain" href="matches/') == 3


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_results_page(place: tuple[Path, str], browser: Browser,
                          size: tuple[int, int], tmp_path: Path) -> None:
    _, url = place
    phone = size == PHONE
    with web_app(url) as port, watched_page(browser, size, phone=phone) as watched:
        page = watched.page
        page.goto(f"http://127.0.0.1:{port}/tournaments/1")
        standings = page.locator("#standings tbody tr")
        assert sorted(standings.evaluate_all("rows => rows.map(r => r.dataset.bot)")) == \
            sorted(BOTS)
        # the cross-table: every ordered pair of bots has a cell, six matches each
        cells = page.locator("#matrix td[data-against]")
        assert cells.count() == 6
        assert set(cells.evaluate_all("cs => cs.map(c => c.dataset.matches)")) == {"6"}
        for bot in BOTS:
            assert page.locator(f'#matrix th:text-is("{bot}")').count() == 2  # row, column
        wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not wide, "the page scrolls sideways"
        watched.screenshot(f"tournament-results-{'phone' if phone else 'desktop'}")
        with page.expect_download() as download:
            page.locator("#download-games").click()
        saved = tmp_path / "games.jsonl"
        download.value.save_as(saved)
        assert download.value.suggested_filename == "tournament-1-games.jsonl"
        verified = run_in_process("verify", "--file", str(saved), cwd=tmp_path)
        assert verified.stdout == "6 of 6 log(s) genuine\n", verified
        watched.check()


def test_publish_refuses_what_it_cannot_publish(place: tuple[Path, str], tmp_path: Path
                                               ) -> None:
    source, url = place
    for args, message in [
            (("2", str(tmp_path / "site")), "error: tournament 2 is running: publish it "
             "when it is finished (see `cfarena tournaments`)\n"),
            (("9", str(tmp_path / "site")), "error: no tournament 9\n"),
            (("1", str(source / "cfarena.db")), f"error: {source / 'cfarena.db'}: exists "
             "and is not a directory\n")]:
        refused = run_in_process("publish", *args, "--db", url, cwd=tmp_path)
        assert (refused.returncode, refused.stderr) == (2, message)
    assert not (tmp_path / "site").exists()
    # a directory holding anything but an earlier publish is never written into
    (tmp_path / "web-root").mkdir()
    (tmp_path / "web-root" / "index.html").write_text("the organiser's own page")
    refused = run_in_process("publish", "1", str(tmp_path / "web-root"), "--db", url,
                             cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (
        2, f"error: {tmp_path / 'web-root'} is not empty and not an earlier `cfarena "
        "publish`: name a new or empty directory\n")
    assert [p.name for p in (tmp_path / "web-root").iterdir()] == ["index.html"]
    assert (tmp_path / "web-root" / "index.html").read_text() == "the organiser's own page"
    # an earlier publish is replaced whole: nothing of it stays behind
    site = tmp_path / "site"
    for again in (False, True):
        done = run_in_process("publish", "1", str(site), "--db", url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (site / ".cfarena-publish").is_file()
        assert (site / "matches" / "stale.html").exists() is False, again
        assert len(list((site / "matches").iterdir())) == 6
        (site / "matches" / "stale.html").write_text("from an earlier publish")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "web-root"]  # no staging


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_publish_writes_the_results_page_as_a_static_site(
        place: tuple[Path, str], browser: Browser, size: tuple[int, int], tmp_path: Path
        ) -> None:
    _, url = place
    site = tmp_path / "published" / "final"
    done = run_in_process("publish", "1", str(site), "--db", url, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"tournament_id": 1, "index": str(site / "index.html"),
                                       "matches": 6, "left_out": 0}
    exported = run_in_process("export", "--tournament", "1", "--db", url, cwd=tmp_path)
    assert (site / "games.jsonl").read_text(encoding="utf-8") == exported.stdout
    verified = run_in_process("verify", "--file", str(site / "games.jsonl"), cwd=tmp_path)
    assert verified.stdout == "6 of 6 log(s) genuine\n", verified
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="/' not in index and 'src="/' not in index  # movable: relative links only
    phone = size == PHONE
    with watched_page(browser, size, phone=phone) as watched:
        page = watched.page
        page.goto((site / "index.html").as_uri())
        standings = page.locator("#standings tbody tr")
        assert sorted(standings.evaluate_all("rows => rows.map(r => r.dataset.bot)")) == \
            sorted(BOTS)
        assert page.locator("#matrix td[data-against]").count() == 6
        # every match is listed, and the list links each to its replay page, which exists
        links = page.locator("#tournament-matches a.plain").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))")
        assert len(links) == 6 and all((site / link).is_file() for link in links)
        assert page.evaluate("getComputedStyle(document.body).margin") == "0px"  # styled
        wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not wide, "the page scrolls sideways"
        watched.screenshot(f"tournament-published-{'phone' if phone else 'desktop'}")
        page.locator("#tournament-matches a.plain").first.click()
        page.wait_for_load_state()
        assert page.url.endswith(links[0]) and page.title()
        watched.check()
