"""Exporting a game log: the HTML viewer, the log as JSON, or the replay as plain text;
many logs as JSON Lines (one `log_line` each)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from cfarena.match.log_format import log_line
from cfarena.server.replay.html import write_html
from cfarena.server.replay.terminal import replay_terminal

FORMATS = ("html", "json", "txt")


def log_lines(logs: Iterable[tuple[str, Mapping[str, Any] | Exception]]) -> Iterator[str]:
    """JSON Lines of game logs: `log_line` and a newline for each (match id, log) of
    `logs` (`Database.game_logs`), as they come; an exception in place of a log (a
    stored log whose digest mismatches) is raised when its turn comes."""
    for _match_id, log in logs:
        if isinstance(log, Exception):
            raise log
        yield log_line(log) + "\n"


def replay_text(log: Mapping[str, Any], seat: int | None = None, width: int = 120) -> str:
    """The full terminal replay (every step) as plain text."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    replay_terminal(log, seat=seat, show_all=True, console=console)
    return buf.getvalue()


def export_log(
    log: Mapping[str, Any], path: str | Path, fmt: str | None = None, seat: int | None = None
) -> Path:
    """Write `log` to `path` as `fmt` (html, json or txt; default from the file suffix).

    html is the self-contained viewer (every view inside, or `seat`'s alone); json
    the log itself (`log_line`, with a newline); txt the all-seeing replay, or
    `seat`'s view.
    """
    target = Path(path)
    kind = (fmt or target.suffix.lstrip(".") or "html").lower()
    if kind == "htm":
        kind = "html"
    if kind not in FORMATS:
        raise ValueError(f"export format must be one of {', '.join(FORMATS)}, got {kind!r}")
    if kind == "html":
        return write_html(log, target, seat)
    if kind == "json":
        target.write_text(log_line(log) + "\n", encoding="utf-8")
        return target
    target.write_text(replay_text(log, seat), encoding="utf-8")
    return target
