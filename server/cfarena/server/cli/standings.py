"""`cfarena standings`: the ladder and the standings of a pool or a tournament."""

from __future__ import annotations

from typing import Annotated

import typer

from cfarena.server.cli.common import (
    DbOption,
    check_id,
    database,
    err,
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
        "--ladder", help="only the ladder, as the web page's leaderboard shows it "
        "(with --json)")
                      ] = False,
    versions: Annotated[bool, typer.Option(
        "--versions", help="every version of each bot in the ladder, not only the latest")
                        ] = False,
    matrix: Annotated[bool, typer.Option(
        "--matrix", help="also the head-to-head matrix: each bot's Elo difference over "
        "each other bot, 95% CI, matches (with --json: {standings, matrix})")] = False,
    db_url: str = DbOption,
) -> None:
    """Standings: a pool's ladder as the web page shows it; a tournament's per-bot
    Bradley-Terry fit; `--matrix`: every pair's head-to-head Elo difference.

    The ladder is ranked by the online rating of each bot's latest version; the
    per-bot table (a tournament's, or a pool's with `--matrix`; `--json` without
    `--ladder`) has the Bradley-Terry fit with its interval, matches, wins, points
    per round and faults. Without --tournament only the ladder's matches (`serve`'s)
    count; a tournament's table is --tournament ID."""
    if tournament is not None and (ladder or versions):
        fail("--ladder and --versions are for serve's pools, not tournaments")
    if ladder and matrix:
        fail("--matrix is for the standings, not --ladder")
    check_id("--tournament", tournament)
    # imported when the command runs: the standings read the database, and loading
    # SQLAlchemy and Alembic would make `cfarena standings --help` take a second
    from cfarena.server.standings import head_to_head_matrix, ladder_board, standings_rows

    with database(db_url, create=False) as db:
        if tournament is not None and db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament}")
        ladder_list = ladder_board(db, pool or "global", versions) if tournament is None else []
        rows = [] if ladder else standings_rows(db, tournament, pool)
        pairs = (head_to_head_matrix(db, tournament, pool, [r["bot"] for r in rows])
                 if matrix else None)
        # without --tournament the tables are the ladder's: say where tournaments' are
        hint = (tournament is None and not rows and not ladder_list
                and bool(db.list_tournaments()))
    if json_out:
        print_json(ladder_list if ladder else
                   rows if pairs is None else {"standings": rows, "matrix": pairs})
        return
    if ladder_list:  # the ladder's one order, as on the web page; the Bradley-Terry
        out.print(ladder_table(ladder_list, f"Ladder, pool {pool or 'global'}"))
    if ladder or (ladder_list and pairs is None):  # table per bot only with --matrix
        return
    if hint:
        err.print("no ladder matches here; a tournament's table is `cfarena standings "
                  "--tournament ID` (see `cfarena tournaments`)", soft_wrap=True)
        return  # an empty table under it would tell another story
    title = f"Tournament #{tournament}" if tournament is not None else f"Pool {pool or 'global'}"
    out.print(standings_table(rows, title))
    if pairs is not None:
        out.print(matrix_table(pairs, f"{title}: head to head"))


def register(app: typer.Typer) -> None:
    app.command("standings")(standings_cmd)
