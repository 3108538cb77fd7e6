"""An entrant's download of its games (`/me/games.jsonl`) is bounded: pages of at most
`GAMES_PAGE` games, in the order they ended, each naming the next (`Link: ...; rel="next"`,
`?after=ID&limit=N`), only the page's logs re-simulated, streamed; one download per
bot at a time (another meanwhile: 429, one line), also once a download is cut off.
A match's page shows how the seat's process ended without the arena's hint (the
organiser's paths). Served in-process over real HTTP from a real SQLite file."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.credentials import hash_token
from cfarena.server.storage import MatchPlan, open_database
from cfarena.server.web import entrant_data
from tests.web.entrant_games import RULES, Tournament, play, store_tournament
from tests.web.inprocess import served_site
from tests.web.visitor import Visitor

KEY = "alpha-web-key-for-the-download-test-0123"
MORE = 5  # matches of alpha's beside the stored tournament's
# how the seats' processes of those ended: the bot's line, then the arena's hint for
# the organiser (it names the organiser's paths)
ENDED = ("exited with code 1: bot> weights.bin: No such file or directory\n"
         "hint: the sandbox shows only the system directories, Python's and "
         "/home/organiser/bots/alpha; name more with --sandbox-bind DIR")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[int, Tournament, list[str]]]:
    """A site whose alpha has 1 + MORE stored games (and a scheduled rotation of a deal
    it played: that game's seed stays hidden); (port, tournament, alpha's logged ids)."""
    path: Path = tmp_path_factory.mktemp("entrant-download") / "arena.db"
    url = f"sqlite:///{path}"
    with open_database(url) as db:
        t = store_tournament(db)
        ids = db.tournament_bots(t.id)
        alpha, gamma = (next(i for i, n in ids.items() if n == name)
                        for name in ("alpha", "gamma"))
        plans = [MatchPlan(f"g{2 + i}-r0", 1000 + i, RULES, 2, [gamma, alpha])
                 for i in range(MORE)]
        more = db.schedule_matches(t.id, plans)
        for match_id, plan in zip(more, plans, strict=True):
            play(db, match_id, plan.key, t.id, plan.seed, ["gamma", "alpha"], exit=ENDED)
            t.keys[match_id] = plan.key
        db.rotate_token("alpha", hash_token(KEY), t.id)
    with served_site(url) as (port, _site, _loop):
        yield port, t, [t.first, *more]


def _signed_in(port: int) -> Visitor:
    visitor = Visitor(port)
    assert visitor.sign_in(KEY) == 303
    return visitor


def _next(headers: dict[str, str]) -> str | None:
    link = headers.get("link")
    if link is None:
        return None
    found = re.fullmatch(r'<([^>]+)>; rel="next"', link)
    assert found, link
    return found[1]


def test_a_bot_with_more_games_than_a_page_gets_them_all_in_pages_none_twice(
        served: tuple[int, Tournament, list[str]]) -> None:
    port, _t, logged = served
    alpha = _signed_in(port)
    status, headers, text = alpha.send("GET", "/me/games.jsonl")
    assert status == 200 and _next(headers) is None  # fewer than a whole page
    whole = [json.loads(line) for line in text.splitlines()]
    assert [r["match_id"] for r in whole] == logged  # in the order they ended
    # the deal of t.first is dealt again by a match not over: its seed is left out
    assert [r["seed"] is None for r in whole] == [True] + [False] * MORE
    for limit in (2, 4):
        pages: list[list[dict[str, Any]]] = []
        path: str | None = f"/me/games.jsonl?limit={limit}"
        while path is not None:
            status, headers, text = alpha.send("GET", path)
            assert status == 200, (path, text)
            pages.append([json.loads(line) for line in text.splitlines()])
            path = _next(headers)
            assert len(pages) <= len(logged)
        assert [len(p) for p in pages] == [
            min(limit, len(logged) - i) for i in range(0, len(logged), limit)], limit
        assert [r for p in pages for r in p] == whole, limit  # all, none twice, the same


def test_a_page_asked_for_wrongly_is_refused_in_one_line(
        served: tuple[int, Tournament, list[str]]) -> None:
    port, t, _logged = served
    alpha = _signed_in(port)
    for query in ("limit=0", f"limit={entrant_data.GAMES_PAGE + 1}", "limit=x",
                  "limit=-1", "limit=" + "9" * 5000, "limit=%C2%B2", "after="):
        status, _headers, text = alpha.send("GET", f"/me/games.jsonl?{query}")
        assert status == 400 and text.count("\n") == 1, (query, text)
    assert f"from 1 to {entrant_data.GAMES_PAGE}" in alpha.send(
        "GET", "/me/games.jsonl?limit=0")[2]
    # a page after another bot's match, or none: as if no such match (nothing of it)
    for after in (t.others, "T999-g0-r0"):
        status, _headers, text = alpha.send("GET", f"/me/games.jsonl?after={after}")
        assert status == 404 and text == f"none of your matches has the id {after!r}\n"


def test_one_download_at_a_time_per_bot(served: tuple[int, Tournament, list[str]],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    port, _t, logged = served
    go_on = threading.Event()
    endless = threading.Event()
    real = entrant_data.games

    def held(*args: Any) -> entrant_data.GamesPage:
        """The page, whose lines wait for `go_on` after the first (a slow download);
        the first asked for once `endless` is set never ends by itself (a line every
        0.05 s after the page's, for up to 30 s): only its client cutting it off ends it."""
        page = real(*args)
        forever = endless.is_set()
        endless.clear()

        def lines() -> Iterator[str]:
            for i, line in enumerate(page.lines):
                if i == 1:
                    assert go_on.wait(30)
                yield line
            deadline = time.monotonic() + 30
            while forever and time.monotonic() < deadline:
                time.sleep(0.05)
                yield "{}\n"
        return entrant_data.GamesPage(lines(), page.last)

    monkeypatch.setattr(entrant_data, "games", held)
    alpha = _signed_in(port)
    cookie = "; ".join(f"{k}={v}" for k, v in alpha.cookies.items())

    def start() -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/me/games.jsonl", headers={"Cookie": cookie})
        reply = conn.getresponse()
        assert reply.status == 200  # its headers are sent; its lines are being made
        return reply

    first = start()
    status, headers, text = alpha.send("GET", "/me/games.jsonl")
    assert status == 429 and headers["retry-after"] == "5"
    assert text == ("a download of this bot's games is in progress: wait for it to "
                    "end, then ask again\n")
    go_on.set()
    assert [json.loads(x)["match_id"] for x in first.read().decode().splitlines()] == logged
    first.close()
    # over: the next one is served (and one cut off by its client frees the bot too:
    # that download would never end by itself)
    endless.set()
    cut = start()
    assert alpha.send("GET", "/me/games.jsonl")[0] == 429
    cut.close()
    deadline = time.monotonic() + 10
    while (status := alpha.send("GET", "/me/games.jsonl")[0]) == 429 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status == 200


def test_an_entrant_sees_how_its_process_ended_without_the_organisers_hint(
        served: tuple[int, Tournament, list[str]]) -> None:
    port, _t, logged = served
    status, page = _signed_in(port).get(f"/me/matches/{logged[-1]}")
    assert status == 200
    assert "exited with code 1: bot&gt; weights.bin: No such file or directory" in page
    assert "hint:" not in page and "/home/organiser" not in page
