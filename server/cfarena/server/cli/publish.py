"""`cfarena publish`: a finished tournament's results as a static site."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cfarena.server.cli.common import DbOption, check_id, database, fail, out, print_json


def publish_cmd(
    tournament: Annotated[int, typer.Argument(help="tournament id (see `cfarena "
                                              "tournaments`)", show_default=False)],
    directory: Annotated[Path, typer.Argument(help="directory to write (created if "
                                              "missing)", show_default=False)],
    json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    db_url: str = DbOption,
) -> None:
    """Write a finished tournament's results as a static site: the web page's results
    page with no server.

    DIRECTORY gets index.html (standings, head-to-head cross-table, every match),
    matches/ID.html (each match's replay viewer), games.jsonl (every game log, as
    `export --tournament`; `verify --file` checks it) and static/. Every link is
    relative: host the directory anywhere, or open index.html from disk."""
    check_id("TOURNAMENT", tournament)
    from cfarena.server.web.data import NotFound
    from cfarena.server.web.publish import NotPublishable, publish_tournament

    if directory.exists() and not directory.is_dir():
        fail(f"{directory}: exists and is not a directory")
    with database(db_url, create=False) as db:
        try:
            published = publish_tournament(db, tournament, directory)
        except (NotFound, NotPublishable) as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{directory}: cannot write: {exc.strerror or exc}")
    index = published.directory / "index.html"
    if json_out:
        print_json({"tournament_id": tournament, "index": str(index),
                    "matches": published.matches, "left_out": published.left_out})
        return
    left = (f"; {published.left_out} left out while a match not over deals their deal "
            "again" if published.left_out else "")
    out.print(f"published tournament {tournament}: {index} ({published.matches} matches"
              f"{left})", soft_wrap=True, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("publish")(publish_cmd)
