"""Organiser commands: bots, standings, tournaments, matches, show, export."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cfarena.server.cli.common import DbOption, database, fail, out, print_json
from cfarena.server.cli.report import standings_rows, standings_table
from cfarena.server.referee import new_token
from cfarena.server.replay import export_log
from cfarena.server.storage import MatchStatus, SeatLog, StorageError, hash_token

bots_app = typer.Typer(help="Register and list bots (for `cfarena serve`).", no_args_is_help=True)


@bots_app.command("add")
def bots_add(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    command: Annotated[str | None, typer.Option("--command", help="how to start it (notes)")
                       ] = None,
    token: Annotated[str | None, typer.Option(
        "--token", help="use this token instead of a new random one (e.g. from a secret); "
        "registering the same name and token again is a no-op")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="print nothing")] = False,
    db_url: str = DbOption,
) -> None:
    """Register a bot and print its new token (shown once; only its hash is stored)."""
    if token is not None and len(token) < 8:
        fail("--token must be at least 8 characters")
    secret = token or new_token()
    with database(db_url) as db:
        try:
            bot_id = db.ensure_bot(name, hash_token(secret), command)
        except StorageError as exc:
            fail(f"{exc} (bot names are unique)")
    if quiet:
        return
    out.print(f"bot {name!r} registered (id {bot_id}).")
    if token is None:
        out.print("Its token, shown only now:")
        print(secret)


@bots_app.command("list")
def bots_list(db_url: str = DbOption) -> None:
    """List registered bots."""
    with database(db_url) as db:
        table = Table("id", "name", "command", "registered")
        for b in db.list_bots():
            table.add_row(str(b.id), b.name, b.command or "", f"{b.created_at:%Y-%m-%d %H:%M}")
        out.print(table)


def standings_cmd(
    tournament: Annotated[int | None, typer.Option("--tournament", "-t",
                                                   help="one tournament")] = None,
    pool: Annotated[str | None, typer.Option("--pool", help='rating pool, e.g. "standard/4p"')
                    ] = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
    db_url: str = DbOption,
) -> None:
    """Standings: ratings, matches, wins, points per round, faults."""
    with database(db_url) as db:
        if tournament is not None and db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament}")
        rows = standings_rows(db, tournament, pool)
    if json_out:
        print_json(rows)
        return
    title = f"Tournament #{tournament}" if tournament is not None else f"Pool {pool or 'global'}"
    out.print(standings_table(rows, title))


def tournaments_cmd(db_url: str = DbOption,
                    json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List tournaments."""
    with database(db_url) as db:
        items = db.list_tournaments()
    if json_out:
        print_json([{"id": t.id, "name": t.name, "status": t.status.value,
                     "created_at": t.created_at, "config": t.config} for t in items])
        return
    table = Table("id", "name", "status", "bots", "created")
    for t in items:
        bots = ", ".join(b["name"] for b in t.config.get("bots", []))
        table.add_row(str(t.id), t.name, t.status.value, bots, f"{t.created_at:%Y-%m-%d %H:%M}")
    out.print(table)


def matches_cmd(
    tournament: Annotated[int | None, typer.Option("--tournament", "-t")] = None,
    bot: Annotated[str | None, typer.Option("--bot", help="matches of this bot")] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="scheduled, running, finished or aborted")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 50,
    json_out: Annotated[bool, typer.Option("--json")] = False,
    db_url: str = DbOption,
) -> None:
    """List matches, newest first."""
    if status is not None and status not in {s.value for s in MatchStatus}:
        fail(f"--status must be one of {', '.join(s.value for s in MatchStatus)}")
    with database(db_url) as db:
        items = db.list_matches(tournament, bot, status, limit)
    if json_out:
        print_json([{
            "id": m.id, "tournament_id": m.tournament_id, "status": m.status.value,
            "seed": m.seed, "players": m.players, "reason": m.reason,
            "seats": [{"seat": s.seat, "bot": s.bot_name, "total": s.total, "rank": s.rank,
                       "forfeited": s.forfeited, "faults": s.faults} for s in m.seats],
        } for m in items])
        return
    table = Table("match", "status", "seats (rank: bot total)", "faults", "finished")
    for m in items:
        seats = "  ".join(
            f"{s.rank if s.rank is not None else '-'}: {s.bot_name} "
            f"{s.total if s.total is not None else ''}".strip()
            for s in m.seats
        )
        faults = sum(s.faults for s in m.seats)
        done = f"{m.finished_at:%H:%M:%S}" if m.finished_at else ""
        table.add_row(m.id, m.status.value, seats, str(faults or ""), done)
    out.print(table)


def show_cmd(
    match_id: Annotated[str, typer.Argument(help="match id")],
    logs: Annotated[bool, typer.Option(
        "--logs", help="also print what each seat's bot process printed (stdout and stderr, "
        "as captured: the start and the end of a long output)")] = False,
    db_url: str = DbOption,
) -> None:
    """One match: result, scores per round, faults; each seat's output with --logs."""
    with database(db_url) as db:
        detail = db.get_match(match_id)
        seat_logs = db.seat_logs(match_id) if detail is not None else []
    if detail is None:
        fail(f"no match {match_id!r} (see `cfarena matches`)")
    m = detail.match
    out.print(f"[bold]match {escape(m.id)}[/]  {m.status.value}  seed {m.seed}  "
              f"rules {escape(str(detail.rules))}"
              + (f"  reason: {escape(m.reason)}" if m.reason else ""))
    table = Table("seat", "bot", *(f"R{i + 1}" for i in range(len(detail.round_scores or []))),
                  "total", "rank")
    for s in m.seats:
        scores = [str(r[s.seat]) for r in detail.round_scores or []]
        rank = "-" if s.rank is None else str(s.rank) + (" (forfeit)" if s.forfeited else "")
        table.add_row(str(s.seat), Text(s.bot_name), *scores,
                      "-" if s.total is None else str(s.total), rank)
    out.print(table)
    for f in detail.faults:  # the detail is the bot's own input: no markup in it
        out.print(f"[red]fault[/] seat {f.seat} ({escape(f.bot_name)}) {f.kind.value} at turn "
                  f"{f.at_turn}: {escape(printable(f.detail))}")
    names = {s.seat: s.bot_name for s in m.seats}
    if not logs:
        for x in seat_logs:
            exit_line = f", {printable(x.exit)}" if x.exit else ""
            out.print(Text(f"seat {x.seat} ({names.get(x.seat, '?')}): "
                           f"{human_bytes(x.output_bytes)} of output{exit_line} — see --logs"),
                      soft_wrap=True)
        return
    if not seat_logs:
        out.print("no seat output stored for this match")
    for x in seat_logs:
        _print_seat_log(x, names.get(x.seat, "?"))


def _print_seat_log(log: SeatLog, bot: str) -> None:
    """A heading (seat, bot, how the process ended, how much it printed), then the output."""
    ended = printable(log.exit) if log.exit else "end not recorded"
    out.print()
    out.print(Text(f"── seat {log.seat} ({bot}): {ended}; "
                   f"{human_bytes(log.output_bytes)} of output ──", style="bold"),
              soft_wrap=True)
    text = printable(log.output.replace("\r\n", "\n"), keep="\n\t")
    if not text:
        out.print(Text("(no output)", style="dim"))
        return
    # written as is: no markup, emoji codes, wrapping or tab expansion from rich
    out.file.write(text if text.endswith("\n") else text + "\n")
    out.file.flush()


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str, keep: str = "") -> str:
    """`text` with control characters (but those in `keep`) shown as \\xNN, so that
    a bot's output cannot drive the organiser's terminal (escape sequences)."""
    return _CONTROL.sub(lambda c: c[0] if c[0] in keep else f"\\x{ord(c[0]):02x}", text)


def human_bytes(n: int) -> str:
    """812 B, 1.2 KiB, 3.0 MiB ..."""
    if n < 1024:
        return f"{n} B"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def export_cmd(
    match_id: Annotated[str, typer.Argument(help="match id")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file (default stdout)")
                      ] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", help="json (default), html (the viewer) or txt (the printed replay); "
        "by default from the file suffix")] = None,
    seat: Annotated[int | None, typer.Option("--seat", help="txt: as this seat saw it")
                    ] = None,
    db_url: str = DbOption,
) -> None:
    """Write a match's game log as JSON (format: docs/gamelog.md), or as HTML/text."""
    if fmt is not None and fmt not in ("json", "html", "txt"):
        fail("--format must be json, html or txt")
    with database(db_url) as db:
        log = db.get_log(match_id)
    if log is None:
        fail(f"no game log for match {match_id!r}")
    if output is None:
        if fmt not in (None, "json"):
            fail("--format html/txt needs --output FILE")
        print(json.dumps(log, indent=1))
        return
    export_log(log, output, fmt=fmt, seat=seat)
    out.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    app.add_typer(bots_app, name="bots")
    app.command("standings")(standings_cmd)
    app.command("tournaments")(tournaments_cmd)
    app.command("matches")(matches_cmd)
    app.command("show")(show_cmd)
    app.command("export")(export_cmd)
