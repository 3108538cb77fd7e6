"""The match page and its JSON show each seat's luck (in points) and adjusted total,
computed from the stored game log by `sprt.luck`, and only once the deal is revealed:
the luck is computed from the boneyard (over real HTTP: tests/web/inprocess.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cfarena.server.storage import MatchPlan, open_database
from tests.cli.helpers import one_match_luck
from tests.web.inprocess import request, web_app


def test_the_match_page_shows_luck_once_the_deal_is_revealed(tmp_path: Path) -> None:
    url, seats, luck = one_match_luck(tmp_path / "arena.db")
    totals = {seat: total for seat, (_bot, total) in seats.items()}
    with web_app(url) as port:
        status, body = request(port, "GET", "/api/matches/m1")
        assert status == 200
        shown = json.loads(body)["luck"]
        assert [(x["seat"], x["luck"], x["adjusted"]) for x in shown] == [
            (s, round(c, 1), round((totals[s] or 0) + c, 1)) for s, c in enumerate(luck)]
        status, page = request(port, "GET", "/matches/m1")
        assert status == 200
        html = page.decode()
        assert 'id="luck-note"' in html
        cells = re.findall(r'<tr data-seat="(\d+)".*?data-luck="([^"]+)">([^<]+)</td>'
                           r'<td class="num adjusted">([^<]+)</td>', html)
        assert {int(s): (float(v), text, adj) for s, v, text, adj in cells} == {
            s: (round(c, 1), f"{round(c, 1):+.1f}", f"{round((totals[s] or 0) + c, 1):.1f}")
            for s, c in enumerate(luck)}
    with open_database(url) as db:  # the same deal scheduled again: hidden again
        db.schedule_matches(None, [MatchPlan("m2", 7, {"preset": "standard",
                                                       "rounds": "single"}, 2,
                                             [b.id for b in db.list_bots()][:2])])
    with web_app(url) as port:
        status, body = request(port, "GET", "/api/matches/m1")
        assert status == 200 and json.loads(body)["luck"] is None
        html = request(port, "GET", "/matches/m1")[1].decode()
        assert "data-luck" not in html and 'id="luck-note"' not in html
