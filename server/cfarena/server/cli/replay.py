"""`cfarena replay` and `cfarena verify`: step through logged games, prove logs genuine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from cfarena.server.cli.common import (
    DbOption,
    check_id,
    database,
    err,
    fail,
    out,
    print_json,
    write_output,
)


def _load(match_id: str | None, file: Path | None, db_url: str) -> dict[str, Any]:
    if match_id is None and file is None:
        fail("give a MATCH id or --file LOG.json (both: that match of a JSON Lines file)")
    if file is not None:
        from cfarena.server.replay import LogFileError, load_log_file

        try:
            return load_log_file(file, match_id=match_id)
        except LogFileError as exc:
            fail(str(exc))
    assert match_id is not None
    with database(db_url, create=False) as db:
        log = db.get_log(match_id)
    if log is None:
        fail(f"no game log for match {match_id!r} (see `cfarena matches`)")
    return log


def replay_cmd(
    match_id: Annotated[str | None, typer.Argument(
        help="match id (from `cfarena matches`; with --file, the match of a JSON Lines file)",
        metavar="MATCH")] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", "-f", help="an exported log (.json, or .jsonl of `export --tournament`) "
        "instead")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", "-s", help="show the game as this seat saw it (its hand, the moves it "
        "was offered and chose, its decision times); with --html, a file of that view "
        "only")] = None,
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
            write_output("--html", html, lambda: write_html(log, html, seat))
            view = "every view" if seat is None else f"seat {seat}'s view only"
            out.print(f"wrote {html} ({view}; open it in a browser, no network needed)")
            return
        replay_terminal(log, seat=seat, show_all=show_all, console=out)
    except LogError as exc:
        fail(f"the log cannot be replayed: {exc}", code=1)


def verify_cmd(
    match_id: Annotated[str | None, typer.Argument(help="match id", metavar="MATCH")] = None,
    all_matches: Annotated[bool, typer.Option("--all", help="every match with a log")] = False,
    tournament: Annotated[int | None, typer.Option("--tournament", "-t",
                                                   help="every match of a tournament")] = None,
    file: Annotated[list[Path] | None, typer.Option(
        "--file", "-f", help="exported log file(s) instead of the database (JSON, or JSON "
        "Lines of `export --tournament`: every line)")] = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="a line for every log, genuine ones too")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")
                        ] = False,
    db_url: str = DbOption,
) -> None:
    """Re-simulate logged matches from seed, rules and decisions; report any difference.

    Prints each log that is not genuine with its differences (--verbose: every
    log), then one line: "822 of 822 log(s) genuine". A progress bar on stderr
    when it is a terminal. Exit code 0 when every log is genuine, 1 when any
    differs, 2 for usage errors.
    """
    chosen = sum([match_id is not None, all_matches, tournament is not None, bool(file)])
    if chosen != 1:
        fail("give exactly one of: a MATCH id, --all, --tournament ID, --file LOG.json")
    check_id("--tournament", tournament)
    from cfarena.server.replay.verify import LogVerdict, VerifyReport, verify_one

    verdicts: list[LogVerdict] = []
    with _VerifyProgress() as progress:
        for name, log in _logs_to_verify(match_id, tournament, file, db_url, progress):
            verdict = (verify_one(name, log) if not isinstance(log, Exception) else
                       LogVerdict(name, None, "", [str(log).removeprefix(f"{name}: ")],
                                  readable=False))
            verdicts.append(verdict)
            if not json_out and (verbose or not verdict.ok):
                progress.print(verdict.lines())
            progress.advance()
    report = VerifyReport(verdicts)
    if json_out:
        print_json(report.to_dict())
    else:
        out.print(report.summary(), markup=False, highlight=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


class _VerifyProgress:
    """Logs verified so far, as a bar on stderr (only when it is a terminal), and the
    report's lines printed above it."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self.bar = Progress("verifying", BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=err, disable=not err.is_terminal,
                            transient=True)
        self.task = self.bar.add_task("verifying", total=None)

    def __enter__(self) -> _VerifyProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def expect(self, total: int) -> None:
        self.bar.update(self.task, total=total)

    def advance(self) -> None:
        self.bar.advance(self.task)

    def print(self, lines: list[str]) -> None:
        for line in lines:  # stdout, not the bar's stderr: what a script reads
            out.print(line, markup=False, highlight=False, soft_wrap=True)


def _logs_to_verify(match_id: str | None, tournament: int | None, files: list[Path] | None,
                    db_url: str, progress: _VerifyProgress) -> Iterator[tuple[str, Any]]:
    """(name, log, or the exception saying why it could not be read) of every log to
    verify: the files' (each line of JSON Lines), one match's, or the database's (a
    tournament's or all), read a batch at a time."""
    if files:
        from cfarena.server.replay import read_log_file

        for path in files:
            yield from read_log_file(path, validate=False)
        return
    with database(db_url, create=False) as db:
        if match_id is not None:
            from cfarena.server.storage import StorageError  # loaded only for a database

            try:
                log = db.get_log(match_id)
            except StorageError as exc:  # stored digest mismatch: tampered in the database
                yield match_id, exc
                return
            if log is None:
                fail(f"no game log for match {match_id!r}")
            yield match_id, log
            return
        if tournament is not None and db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament}")
        progress.expect(db.game_log_count(tournament))
        yield from db.game_logs(tournament)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
    app.command("verify")(verify_cmd)
