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
Every link is relative, so the directory can be moved or served under any path. The site
is written beside DIR and moved into place whole; DIR must be new, empty or an earlier
publish (its `.cfarena-publish` file): anything else there is never overwritten.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfarena.match.log_format import log_line
from cfarena.server.replay.html import render_html
from cfarena.server.storage import Database
from cfarena.server.web import tournaments as tournament_view
from cfarena.server.web.pages import TEMPLATES

STATIC = Path(__file__).parent / "static"
STATIC_FILES = ("app.css", "favicon.svg")
MARKER = ".cfarena-publish"  # in a published site: what a publish again may replace
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
    """Write tournament `tournament_id`'s static site as `directory`: a new or empty
    directory, or an earlier publish's (its MARKER file), which is replaced whole.
    NotFound (web.data) if there is no such tournament; NotPublishable while it is not
    finished, or when `directory` holds anything else (never overwritten)."""
    if directory.exists() and any(directory.iterdir()) \
            and not (directory / MARKER).is_file():
        raise NotPublishable(f"{directory} is not empty and not an earlier `cfarena "
                             "publish`: name a new or empty directory")
    info = tournament_view.tournament(db, tournament_id, matches_shown=None)
    logs = tournament_view.published_logs(db, tournament_id)
    if logs is None:
        raise NotPublishable(f"tournament {tournament_id} is {info['status']}: publish it "
                             "when it is finished (see `cfarena tournaments`)")
    # written beside DIR and moved into place whole: a failure leaves DIR as it was, and
    # a publish again leaves no page of the earlier one behind
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.publishing-",
                                    dir=directory.parent))
    try:
        os.chmod(staging, 0o755)  # a site to serve (mkdtemp makes it 0700)
        published = _write_site(staging, info, logs)
        (staging / MARKER).write_text(f"cfarena publish {tournament_id}\n", encoding="utf-8")
        _replace(directory, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Published(directory, len(published),
                     info["progress"]["finished"] - len(published))


def _write_site(directory: Path, info: dict[str, Any],
                logs: Iterator[tuple[str, dict[str, Any] | Exception]]) -> set[str]:
    """The site's files in `directory`; the ids of the matches given a page."""
    pages = directory / "matches"
    pages.mkdir()
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
    (directory / "static").mkdir()
    for name in STATIC_FILES:
        shutil.copyfile(STATIC / name, directory / "static" / name)
    return published


def _replace(directory: Path, staging: Path) -> None:
    """Move `staging` to `directory`, which is missing, empty or an earlier publish."""
    if not directory.exists():
        staging.rename(directory)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
    old.rmdir()
    directory.rename(old)
    staging.rename(directory)
    shutil.rmtree(old, ignore_errors=True)
