"""`cfarena replay` and `cfarena verify`."""

from __future__ import annotations

from typing import Annotated

import typer

from cfarena.server.cli.common import DbOption, database, fail, out
from cfarena.server.gamelog import verify_log


def verify_cmd(
    match_id: Annotated[str | None, typer.Argument(help="match id")] = None,
    all_matches: Annotated[bool, typer.Option("--all", help="every match with a log")] = False,
    tournament: Annotated[int | None, typer.Option("--tournament", "-t")] = None,
    db_url: str = DbOption,
) -> None:
    """Re-simulate logged matches and report any difference from what was recorded."""
    if match_id is None and not all_matches and tournament is None:
        fail("give a MATCH id, --all or --tournament ID")
    bad = 0
    with database(db_url) as db:
        if match_id is not None:
            ids = [match_id]
        else:
            ids = [m.id for m in db.list_matches(tournament, None, None, None)]
        checked = 0
        for mid in ids:
            log = db.get_log(mid)
            if log is None:
                if match_id is not None:
                    fail(f"no game log for match {mid!r}")
                continue
            checked += 1
            problems = verify_log(log)
            if problems:
                bad += 1
                out.print(f"[red]FAIL[/] {mid}: " + "; ".join(problems))
            else:
                out.print(f"[green]ok[/]   {mid}")
    out.print(f"{checked} checked, {bad} with differences")
    if bad:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_cmd)
