"""`cfarena publish`: a finished tournament's results as a static site, the web page's
results page with no server behind it, for an organiser to host anywhere (any static
file host, or opened from disk).

The directory it writes:

    index.html            the tournament's page (web/templates/tournament.html):
                          standings, head-to-head cross-table, every match
    matches/ID.html       each match's replay viewer (replay/html.py, self-contained)
    games.jsonl           every game log, a line each: `cfarena export --tournament`'s
                          file, which `cfarena verify --file` checks
    static/               the page's stylesheet and icon

It shows what the web page shows of a finished tournament and nothing more: the same
rows (`tournaments.tournament`), the same logs as its "download all games"
(`tournaments.published_logs`: a deal some match not over deals again is left out).
Every link is relative, so the directory can be moved or served under any path.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from cfarena.match.log_format import log_line
from cfarena.server.replay.html import render_html
from cfarena.server.storage import Database
from cfarena.server.web import tournaments as tournament_view
from cfarena.server.web.pages import TEMPLATES

STATIC = Path(__file__).parent / "static"
STATIC_FILES = ("app.css", "favicon.svg")
# a match id as a file name: what the referee and the schedule make (hex, t3-g0-r1-…)
FILE_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class NotPublishable(Exception):
    """The tournament cannot be published (yet): the message says why."""


@dataclass(frozen=True, slots=True)
class Published:
    """What `publish_tournament` wrote."""

    directory: Path
    matches: int  # replay pages (and lines of games.jsonl)
    left_out: int  # matches whose deal a match not over deals again


def publish_tournament(db: Database, tournament_id: int, directory: Path) -> Published:
    """Write tournament `tournament_id`'s static site into `directory` (created if
    missing; files of an earlier publish are overwritten). NotFound (web.data) if there
    is no such tournament, NotPublishable while it is not finished."""
    info = tournament_view.tournament(db, tournament_id, matches_shown=None)
    logs = tournament_view.published_logs(db, tournament_id)
    if logs is None:
        raise NotPublishable(f"tournament {tournament_id} is {info['status']}: publish it "
                             "when it is finished (see `cfarena tournaments`)")
    pages = directory / "matches"
    pages.mkdir(parents=True, exist_ok=True)
    published: set[str] = set()
    with (directory / "games.jsonl").open("w", encoding="utf-8") as games:
        for match_id, log in logs:
            if isinstance(log, Exception):
                raise log
            if FILE_SAFE_ID.fullmatch(match_id) is None:
                raise NotPublishable(f"match id {match_id!r} cannot be a file name")
            games.write(log_line(log) + "\n")
            (pages / f"{match_id}.html").write_text(render_html(log), encoding="utf-8")
            published.add(match_id)
    # every match is listed; one without a page (aborted, or its log left out) unlinked
    html = TEMPLATES.get_template("tournament.html").render(t=info, static_site=True,
                                                            pages=published)
    (directory / "index.html").write_text(html, encoding="utf-8")
    (directory / "static").mkdir(exist_ok=True)
    for name in STATIC_FILES:
        shutil.copyfile(STATIC / name, directory / "static" / name)
    return Published(directory, len(published),
                     info["progress"]["finished"] - len(published))
