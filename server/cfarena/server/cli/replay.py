"""`cfarena replay` and `cfarena verify`: step through logged games, prove logs genuine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cfarena.server.cli.common import (
    DbOption,
    check_id,
    database,
    fail,
    out,
    print_json,
    write_output,
)


def _load(match_id: str | None, file: Path | None, db_url: str) -> dict[str, Any]:
    if (match_id is None) == (file is None):
        fail("give a MATCH id or --file LOG.json (one of them)")
    if file is not None:
        from cfarena.server.replay import LogFileError, load_log_file

        try:
            return load_log_file(file)
        except LogFileError as exc:
            fail(str(exc))
    assert match_id is not None
    with database(db_url, create=False) as db:
        log = db.get_log(match_id)
    if log is None:
        fail(f"no game log for match {match_id!r} (see `cfarena matches`)")
    return log


def replay_cmd(
    match_id: Annotated[str | None, typer.Argument(help="match id (from `cfarena matches`)")
                        ] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f",
                                              help="an exported log (.json) instead")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", "-s", help="show the game as this seat saw it (its hand only)")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="print every step, no stepping")
                        ] = False,
    html: Annotated[Path | None, typer.Option(
        "--html", help="write a self-contained HTML viewer to this file instead")] = None,
    db_url: str = DbOption,
) -> None:
    """Step through a logged game: n/space next, p previous, r/R next/previous round, q quit."""
    # the replay tools load when a command runs, not for its --help (nor for `cfarena`'s)
    from cfarena.server.replay import LogError, replay_terminal, write_html

    log = _load(match_id, file, db_url)
    players = int(log.get("players", 0))
    if seat is not None and not 0 <= seat < players:
        fail(f"--seat must be 0..{players - 1} for this {players}-player match")
    try:
        if html is not None:
            write_output("--html", html, lambda: write_html(log, html))
            out.print(f"wrote {html} (open it in a browser; no network needed)")
            return
        replay_terminal(log, seat=seat, show_all=show_all, console=out)
    except LogError as exc:
        fail(f"the log cannot be replayed: {exc}", code=1)


def verify_cmd(
    match_id: Annotated[str | None, typer.Argument(help="match id")] = None,
    all_matches: Annotated[bool, typer.Option("--all", help="every match with a log")] = False,
    tournament: Annotated[int | None, typer.Option("--tournament", "-t",
                                                   help="every match of a tournament")] = None,
    file: Annotated[list[Path] | None, typer.Option(
        "--file", "-f", help="exported log file(s) instead of the database")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")
                        ] = False,
    db_url: str = DbOption,
) -> None:
    """Re-simulate logged matches from seed, rules and decisions; report any difference.

    Exit code 0 when every log is genuine, 1 when any differs (each difference
    is named), 2 for usage errors.
    """
    chosen = sum([match_id is not None, all_matches, tournament is not None, bool(file)])
    if chosen != 1:
        fail("give exactly one of: a MATCH id, --all, --tournament ID, --file LOG.json")
    check_id("--tournament", tournament)
    from cfarena.server.replay import LogFileError, load_log_file, verify_logs

    logs: dict[str, Any] = {}
    broken: dict[str, str] = {}
    if file:
        for path in file:
            try:
                logs[str(path)] = load_log_file(path, validate=False)
            except LogFileError as exc:
                broken[str(path)] = str(exc)
    else:
        from cfarena.server.storage import StorageError  # loaded only for a database

        with database(db_url, create=False) as db:
            if match_id is not None:
                ids = [match_id]
            else:
                if tournament is not None and db.get_tournament(tournament) is None:
                    fail(f"no tournament {tournament}")
                ids = [m.id for m in db.list_matches(tournament, None, None, None)]
            for mid in ids:
                try:
                    log = db.get_log(mid)
                except StorageError as exc:  # stored digest mismatch: tampered in the database
                    broken[mid] = str(exc)
                    continue
                if log is None:
                    if match_id is not None:
                        fail(f"no game log for match {mid!r}")
                    continue
                logs[mid] = log
    report = verify_logs(logs)
    if json_out:
        data = report.to_dict()
        data["logs"] += [{"name": n, "ok": False, "problems": [p]} for n, p in broken.items()]
        data["ok"] = data["ok"] and not broken
        print_json(data)
    else:
        *lines, _summary = report.lines()
        for line in lines:
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        for name, problem in broken.items():
            out.print(f"FAIL  {name}: {problem}", markup=False, highlight=False, soft_wrap=True)
        good = len(report.verdicts) - len(report.failed)
        total = len(report.verdicts) + len(broken)
        unread = f" ({len(broken)} could not be read)" if broken else ""
        out.print(f"{good} of {total} log(s) genuine{unread}", markup=False, highlight=False,
                  soft_wrap=True)
    if broken or not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
    app.command("verify")(verify_cmd)
