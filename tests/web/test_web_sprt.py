"""A bot test's page (`/sprt/<id>`): its verdict, figures and LLR trace, from a real
database over real HTTP; never its seed or a bot's command line."""

from __future__ import annotations

import re
from pathlib import Path

from cfarena.server.sprt.sequential import EloModel, SequentialTest, SprtBounds, Verdict
from cfarena.server.storage import open_database
from cfarena.server.storage.models import SprtVerdict
from cfarena.server.storage.sprt_store import GroupPoint
from tests.web.inprocess import request, web_app

SEED = 4242424242424242
COMMAND = "python /secret/path/v2.py"


def test_a_test_page_shows_its_verdict_and_llr_trace(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'web.db'}"
    bounds = SprtBounds(0.0, 100.0, model=EloModel.LOGISTIC)
    config = {"players": 2, "seed": SEED, "bots": [{"name": "v2", "command": COMMAND}],
              "sprt": {"elo0": 0.0, "elo1": 100.0, "alpha": 0.05, "beta": 0.05,
                       "elo_model": "logistic", "score": "raw"}}
    test = SequentialTest(bounds, 2)
    with open_database(url) as db:
        info = db.create_sprt_test("sprt v2 vs v1", "v2", "v1", config, "h" * 64)
        group = 0
        while test.verdict() is Verdict.CONTINUE:
            test.add(1.0 if group % 4 else 0.5)
            assert db.count_sprt_groups(info.id, group,
                                        [GroupPoint(group, test.scores[-1], test.llr)],
                                        test.matches, SprtVerdict(test.verdict().value))
            group += 1
    assert test.verdict() is Verdict.H1
    with web_app(url) as port:
        status, body = request(port, "GET", f"/sprt/{info.id}")
        missing, _ = request(port, "GET", "/sprt/999")
    page = body.decode()
    assert status == 200 and missing == 404
    assert 'data-verdict="H1"' in page and "H1 accepted" in page
    assert f"<strong>{test.matches}</strong> matches ({test.groups} deal groups)" in page
    chart = re.search(r'id="llr-chart".*?data-points="(\d+)"', page, re.S)
    assert chart is not None and chart.group(1) == str(test.groups)
    assert page.count('class="level"') == 2  # the two bounds
    assert str(SEED) not in page and "/secret/path" not in page
