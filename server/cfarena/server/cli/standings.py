"""`cfarena standings`: the ladder and the standings of a pool or a tournament."""

from __future__ import annotations

from typing import Annotated

import typer

from cfarena.server.cli.common import (
    DbOption,
    check_id,
    database,
    fail,
    out,
    print_json,
)
from cfarena.server.cli.report import ladder_table, matrix_table, standings_table


def standings_cmd(
    tournament: Annotated[int | None, typer.Option("--tournament", "-t",
                                                   help="one tournament")] = None,
    pool: Annotated[str | None, typer.Option("--pool", help='rating pool, e.g. "standard/4p"')
                    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ladder: Annotated[bool, typer.Option(
        "--ladder", help="only the ladder (online rating per bot version; with --json)")
                      ] = False,
    versions: Annotated[bool, typer.Option(
        "--versions", help="every version of each bot in the ladder, not only the latest")
                        ] = False,
    matrix: Annotated[bool, typer.Option(
        "--matrix", help="also the head-to-head matrix: each bot's Elo difference over "
        "each other bot, 95% CI, matches (with --json: {standings, matrix})")] = False,
    db_url: str = DbOption,
) -> None:
    """Standings: the ladder (`serve`'s online rating per bot version, which ranks) and
    per bot the Bradley-Terry fit with its interval, matches, wins, points per round,
    faults; `--matrix`: every pair's head-to-head Elo difference."""
    if tournament is not None and (ladder or versions):
        fail("--ladder and --versions are for serve's pools, not tournaments")
    if ladder and matrix:
        fail("--matrix is for the standings, not --ladder")
    check_id("--tournament", tournament)
    # imported when the command runs: the standings read the database, and loading
    # SQLAlchemy and Alembic would make `cfarena standings --help` take a second
    from cfarena.server.standings import head_to_head_matrix, ladder_rows, standings_rows

    with database(db_url, create=False) as db:
        if tournament is not None and db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament}")
        ladder_list = ladder_rows(db, pool or "global", versions) if tournament is None else []
        rows = [] if ladder else standings_rows(db, tournament, pool)
        pairs = (head_to_head_matrix(db, tournament, pool, [r["bot"] for r in rows])
                 if matrix else None)
    if json_out:
        print_json(ladder_list if ladder else
                   rows if pairs is None else {"standings": rows, "matrix": pairs})
        return
    if ladder_list:
        out.print(ladder_table(ladder_list, f"Ladder, pool {pool or 'global'}"))
    if ladder:
        return
    title = f"Tournament #{tournament}" if tournament is not None else f"Pool {pool or 'global'}"
    out.print(standings_table(rows, title))
    if pairs is not None:
        out.print(matrix_table(pairs, f"{title}: head to head"))


def register(app: typer.Typer) -> None:
    app.command("standings")(standings_cmd)
