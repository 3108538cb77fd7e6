"""The HTML viewer: compact self-contained data, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.replay import build_frames, build_viewer_data, render_html, write_html

from .cdp import chromium_page, find_chromium, open_file
from .conftest import make_log

SHOT = Path("/tmp/cfarena_replay.png")


def test_embedded_data_is_per_view_and_compact() -> None:
    log = make_log("standard", 4, 11, (3,))
    data = build_viewer_data(log)
    assert [v["seat"] for v in data["views"]] == [None, 0, 1, 2, 3]
    assert len(data["frames"]) == len(build_frames(log))
    events = data["events"]
    for view in data["views"][1:]:
        seat = view["seat"]
        assert [h is None for h in view["hands"]] == [s != seat for s in range(4)]
        for ids in view["ev"]:
            for i in ids:
                e = events[i]
                if e[0] == "d" and e[2] != seat:
                    assert len(e) <= 3 or e[3] is None  # others' draws carry no tile
        assert all(f[1].startswith(f"seat {seat}:") for f in view["faults"])
    # the all-seeing view does carry every hand and drawn tile
    assert all(h is not None for h in data["views"][0]["hands"])
    assert any(e[0] == "d" and len(e) > 3 and e[3] for e in events)
    page = render_html(log)
    assert len(page.encode()) < 400_000  # a full 10-round standard match
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert "https://" not in page and "http://" not in page.replace(
        "http://www.w3.org/2000/svg", "")


def test_a_big_match_stays_a_few_hundred_kb() -> None:
    log = make_log("standard", 8, 3)  # 13 rounds with a double-12 set, 9 views
    assert len(render_html(log).encode()) < 500_000


def _hands(page: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.eval("""
        Array.from(document.querySelectorAll('#hands .hand')).map(r => ({
        seat: +r.dataset.seat, text: r.querySelector('.tiles').textContent,
        pips: r.querySelectorAll('.tiles .pip').length,
        tiles: Array.from(r.querySelectorAll('.tiles svg.htile')).map(t => t.dataset.tile),
        backs: r.querySelectorAll('.tiles .back').length,
        label: r.querySelector('.who').textContent}))""")
    return rows


@pytest.mark.browser
def test_viewer_in_headless_chromium(tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.fail("Chromium is not installed: the HTML viewer test needs it "
                    "(Debian: apt-get install -y chromium; .ci/run installs it)")
    log = make_log("standard", 4, 11, (3,))
    frames = build_frames(log)
    seat1 = build_frames(log, 1)
    html_file = write_html(log, tmp_path / "replay.html")
    with chromium_page(tmp_path / "profile") as page:
        open_file(page, html_file)
        assert page.errors() == []
        assert page.eval("cfReplay.frames") == len(frames)
        assert page.eval("document.title").startswith("cfarena replay")
        count = "document.querySelectorAll('#layout g.tile').length"
        assert page.eval(count) == 1  # the centre double
        # stepping forward with the real buttons draws more tiles
        seen = []
        for _ in range(8):
            page.eval("document.getElementById('next').click()")
            seen.append(page.eval(count))
        assert seen[-1] > 1 and seen == sorted(seen)
        assert seen[-1] == len(frames[8].layout)
        assert page.eval("+document.body.dataset.frame") == 8
        # tiles are drawn with pips (dots), not numbers
        assert page.eval("document.querySelectorAll('#layout g.tile circle.pip').length") > 10
        # the all-seeing view shows every hand's tiles
        for row in _hands(page):
            assert row["tiles"] == [str(t) for t in frames[8].hands[row["seat"]] or ()]
        # a mid-round frame with a pending double: marked, with its free toe slots
        k = next(f.index for f in frames if f.index > 20 and f.pending not in (None, 0))
        page.eval(f"cfReplay.go({k})")
        assert page.eval("document.querySelectorAll('#layout g.tile.pending').length") == 1
        assert page.eval("document.querySelectorAll('#layout .ghost').length") > 0
        assert "pending double" in page.eval("document.getElementById('status').textContent")
        # switch to seat 1's view with the real selector
        page.eval("var s = document.getElementById('view'); s.value = '2';"
                  "s.dispatchEvent(new Event('change'))")
        assert page.eval("document.getElementById('view').selectedOptions[0].textContent"
                         ).startswith("Seat 1")
        for row in _hands(page):
            size = seat1[k].hand_sizes[row["seat"]]
            assert f"{size} tiles" in row["label"]
            if row["seat"] == 1:
                assert row["tiles"] == [str(t) for t in seat1[k].hands[1] or ()]
                assert row["pips"] > 0
            else:
                assert row["tiles"] == [] and row["pips"] == 0
                assert row["backs"] == size
                assert not re.search(r"\d+-\d+", row["text"])
        events = page.eval("document.getElementById('events').textContent")
        assert "(you)" in events or "seat" in events
        # keyboard: 'r' jumps to the next round; the score chart has a line per seat
        page.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'r'}))")
        pos = page.eval("cfReplay.position()")
        assert frames[pos].kind.value == "round_start" and frames[pos].round_index == 1
        page.eval(f"cfReplay.go({len(frames) - 1}); cfReplay.setView(0)")
        assert page.eval("document.querySelectorAll('#chart polyline.series').length") == 4
        rows = page.eval("document.querySelectorAll('#scoreTable tr').length")
        assert rows == 1 + len(log["result"]["round_scores"]) + 2  # head, rounds, total, rank
        # a picture for humans: mid-round, all-seeing, a pending double
        page.eval(f"cfReplay.go({k})")
        shot = page.screenshot(tmp_path / "viewer.png")
        assert shot.stat().st_size > 20_000
        shutil.copyfile(shot, SHOT)
        assert page.errors() == []
    data = json.loads(re.search(r'id="replay-data" type="application/json">(.*?)</script>',
                                html_file.read_text(), re.S).group(1))  # type: ignore[union-attr]
    assert data["match_id"] == log["match_id"]
