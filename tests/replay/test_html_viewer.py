"""The HTML viewer: compact self-contained data, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from cfarena.server.replay import build_frames, build_viewer_data, render_html, write_html
from cfarena.server.replay.simulate import simulate_log
from tests.browser import Watched
from tests.cli.helpers import run_in_process

from .conftest import make_log


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


def _hands(page: Page) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate("""
        Array.from(document.querySelectorAll('#hands .hand')).map(r => ({
        seat: +r.dataset.seat, text: r.querySelector('.tiles').textContent,
        pips: r.querySelectorAll('.tiles .pip').length,
        tiles: Array.from(r.querySelectorAll('.tiles svg.htile')).map(t => t.dataset.tile),
        backs: r.querySelectorAll('.tiles .back').length,
        label: r.querySelector('.who').textContent}))""")
    return rows


@pytest.mark.browser
def test_viewer_in_headless_chromium(tmp_path: Path, page: Watched) -> None:
    log = make_log("standard", 4, 11, (3,))
    frames = build_frames(log)
    seat1 = build_frames(log, 1)
    html_file = write_html(log, tmp_path / "replay.html")
    p = page.page
    p.set_viewport_size({"width": 1440, "height": 1100})
    p.goto(html_file.resolve().as_uri(), wait_until="load")
    page.check()
    assert p.evaluate("cfReplay.frames") == len(frames)
    assert p.title().startswith("cfarena replay")
    tiles = p.locator("#layout g.tile")
    assert tiles.count() == 1  # the centre double
    # stepping forward with the real button (a mouse click) draws more tiles
    seen = []
    for _ in range(8):
        p.click("#next")
        seen.append(tiles.count())
    assert seen[-1] > 1 and seen == sorted(seen)
    assert seen[-1] == len(frames[8].layout)
    assert p.get_attribute("body", "data-frame") == "8"
    # tiles are drawn with pips (dots), not numbers
    assert p.locator("#layout g.tile circle.pip").count() > 10
    # the all-seeing view shows every hand's tiles
    for row in _hands(p):
        assert row["tiles"] == [str(t) for t in frames[8].hands[row["seat"]] or ()]
    # a mid-round frame with a pending double: marked, with its free toe slots
    k = next(f.index for f in frames if f.index > 20 and f.pending not in (None, 0))
    p.evaluate(f"cfReplay.go({k})")
    assert p.locator("#layout g.tile.pending").count() == 1
    assert p.locator("#layout .ghost").count() > 0
    assert "pending double" in p.text_content("#status")  # type: ignore[operator]
    # switch to seat 1's view with the real selector
    p.select_option("#view", "2")
    assert p.evaluate("document.getElementById('view').selectedOptions[0].textContent"
                      ).startswith("Seat 1")
    for row in _hands(p):
        size = seat1[k].hand_sizes[row["seat"]]
        assert f"{size} tiles" in row["label"]
        if row["seat"] == 1:
            assert row["tiles"] == [str(t) for t in seat1[k].hands[1] or ()]
            assert row["pips"] > 0
        else:
            assert row["tiles"] == [] and row["pips"] == 0
            assert row["backs"] == size
            assert not re.search(r"\d+-\d+", row["text"])
    events = p.text_content("#events") or ""
    assert "(you)" in events or "seat" in events
    # at one of seat 1's decisions: the moves it was offered, the one it chose marked
    d = next(f for f in seat1 if len(f.offered) > 1)
    p.evaluate(f"cfReplay.go({d.index})")
    assert p.text_content("#step .offered") == "offered: " + " · ".join(
        f"{i} {key}" for i, key in enumerate(d.offered))
    assert p.text_content("#step .offered .chosen") == f"{d.offered.index(d.move)} {d.move}"
    p.evaluate(f"cfReplay.go({k})")
    # keyboard (a real key press): 'r' jumps to the next round; the score chart has a
    # line per seat
    p.keyboard.press("r")
    pos = p.evaluate("cfReplay.position()")
    assert frames[pos].kind.value == "round_start" and frames[pos].round_index == 1
    p.evaluate(f"cfReplay.go({len(frames) - 1}); cfReplay.setView(0)")
    assert p.locator("#chart polyline.series").count() == 4
    rows = p.locator("#scoreTable tr").count()
    assert rows == 1 + len(log["result"]["round_scores"]) + 2  # head, rounds, total, rank
    # a picture for humans: mid-round, all-seeing, a pending double
    p.evaluate(f"cfReplay.go({k})")
    shot = page.screenshot("replay_viewer", full_page=False)
    assert shot.stat().st_size > 20_000
    page.check()
    data = json.loads(re.search(r'id="replay-data" type="application/json">(.*?)</script>',
                                html_file.read_text(), re.S).group(1))  # type: ignore[union-attr]
    assert data["match_id"] == log["match_id"]


def _payload(page: str) -> str:
    found = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', page,
                      re.S)
    assert found is not None
    return found.group(1)


def _tiles_in(text: str) -> set[str]:
    return {f"{min(a, b)}-{max(a, b)}" for a, b in
            ((int(x), int(y)) for x, y in re.findall(r"(?<![\d-])(\d+)-(\d+)(?![\d-])", text))}


def test_a_seat_file_holds_that_seat_s_view_and_no_other_hand(tmp_path: Path) -> None:
    """`replay --seat N --html`: only seat N's view; the tiles other seats held to the
    end of the round (never shown to N) are nowhere in the file, nor is the seed."""
    log = simulate_log({"preset": "standard", "rounds": "single"}, 4, 23, timeouts=(2,))
    truth = build_frames(log)
    end = [f for f in truth if f.round_end is not None][-1]
    every = render_html(log)
    for seat in range(4):
        hidden = {str(t) for s in range(4) if s != seat for t in (end.hands[s] or ())}
        assert hidden
        page = render_html(log, seat)
        data = json.loads(_payload(page))
        assert [v["seat"] for v in data["views"]] == [seat]
        assert data["seed"] is None and f'"{log["seed"]}"' not in page
        assert not hidden & _tiles_in(_payload(page)), seat
        assert data["views"][0]["hands"][seat] is not None
        # what the seat was offered is in its file; the all-seeing file has every view's
        assert data["views"][0]["offered"]
        # the detector works: the all-seeing file does hold those tiles
        assert hidden <= _tiles_in(_payload(every))
    # through the command: --seat makes a different file, --seat absent the full one
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    for seat, name in ((2, "seat.html"), (None, "all.html")):
        args = ["replay", "--file", str(path), "--html", str(tmp_path / name)]
        done = run_in_process(*args, *(["--seat", str(seat)] if seat is not None else []),
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "seat.html").read_text() == render_html(log, 2)
    assert (tmp_path / "all.html").read_text() == every != render_html(log, 2)
