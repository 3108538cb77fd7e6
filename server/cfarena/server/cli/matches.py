"""Commands on played matches: `cfarena matches` (list), `show` (one match), `export` (its log)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cfarena.server.cli.common import (
    DbOption,
    check_id,
    database,
    fail,
    out,
    print_json,
    seed_json,
    write_output,
)
from cfarena.server.shown_text import printable

if TYPE_CHECKING:
    from cfarena.server.storage import Database, MatchDetail, MatchInfo, SeatInfo, SeatLog


def matches_cmd(
    tournament: Annotated[int | None, typer.Option("--tournament", "-t")] = None,
    bot: Annotated[str | None, typer.Option(
        "--bot", help="matches of this bot: the ladder bot, or with --tournament that "
        "tournament's entrant")] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="scheduled, running, finished or aborted")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 50,
    json_out: Annotated[bool, typer.Option(
        "--json", help="print JSON (seeds as decimal strings)")] = False,
    db_url: str = DbOption,
) -> None:
    """List matches, newest first.

    A result reads "1. greedy 112, 2. random 130": rank, bot and total points
    (lower is better).
    """
    check_id("--limit", limit)
    check_id("--tournament", tournament)
    # imported when the command runs, as the database is (common.database): SQLAlchemy
    # (and the replay's re-simulation, for `export`) would make `cfarena matches --help`,
    # `show --help` and `export --help` take a second
    from cfarena.server.storage import MatchStatus

    if status is not None and status not in {s.value for s in MatchStatus}:
        fail(f"--status must be one of {', '.join(s.value for s in MatchStatus)}")
    with database(db_url, create=False) as db:
        items = db.list_matches(tournament, bot, status, limit)
        if bot is not None and not items:
            _check_bot_named(db, bot, tournament)
    if json_out:
        print_json([match_json(m) for m in items])
        return
    headers = ("match", "status", "result", "faults", "finished")
    rows = [(m.id, m.status.value, result_parts(m.seats), str(sum(s.faults for s in m.seats)
                                                                or ""),
             f"{m.finished_at:%H:%M:%S}" if m.finished_at else "") for m in items]
    # the result column gets what the others leave (a heavy-box table spends 3
    # characters per column and 1 more), its entries are never split over lines
    others = sum(max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                 for i, h in enumerate(headers) if i != 2)
    room = max(out.width - others - 3 * len(headers) - 1, 1)
    table = Table(*headers)
    table.columns[0].overflow = table.columns[2].overflow = "fold"  # never cut a name
    for match, state, parts, faults, done in rows:
        table.add_row(match, state, Text(pack(parts, room)), faults, done)
    out.print(table)


def _stored_id(db: Database, given: str) -> str:
    """The stored id of the match whose bots were given `given` (or `given` itself,
    which then names no match); exit 2 naming them when several tournaments dealt from
    one seed gave that id to their bots."""
    found = db.match_ids_given(given)
    if len(found) > 1:
        fail(f"{len(found)} matches gave their bots the id {given!r} (tournaments dealt "
             f"from one seed): {', '.join(found)}; name one by its stored id")
    return found[0] if found else given


def _check_bot_named(db: Database, bot: str, tournament: int | None) -> None:
    """Exit 2 when `--bot` names no bot where the list looks (the ladder's, or
    `tournament`'s entrants), saying where that name is: an empty table would say
    "no matches" of a bot that is not there."""
    scope = "ladder bot" if tournament is None else f"entrant of tournament {tournament}"
    ladder_bot = db.bot_by_name(bot) is not None
    if (ladder_bot if tournament is None
            else bot in db.tournament_bots(tournament).values()):
        return  # there is such a bot: it has no match (of that status) yet
    entered = [t for t in db.entered_tournaments(bot) if t != tournament]
    elsewhere = ((" (the ladder's `--bot` has it without --tournament)"
                  if tournament is not None and ladder_bot else "")
                 + (f"; tournament{'s' * (len(entered) > 1)} "
                    f"{', '.join(map(str, entered))} {'have' if len(entered) > 1 else 'has'}"
                    " an entrant of that name: add --tournament ID" if entered else ""))
    fail(f"no {scope} named {bot!r}{elsewhere or ' (see `cfarena bots list`)'}")


def match_json(m: MatchInfo) -> dict[str, Any]:
    """A match as `matches --json` and `show --json` print it (its seed a decimal string)."""
    return {
        "id": m.id, "tournament_id": m.tournament_id, "status": m.status.value,
        "seed": seed_json(m.seed), "players": m.players, "reason": m.reason,
        "seats": [{"seat": s.seat, "bot": s.bot_name, "total": s.total, "rank": s.rank,
                   "forfeited": s.forfeited, "faults": s.faults} for s in m.seats],
    }


def result_parts(seats: Sequence[SeatInfo]) -> list[str]:
    """["1. greedy 112", "2. random 130"]: by rank, then seat; a match without a result
    lists its bots in seat order (["greedy", "random"])."""
    if all(s.rank is None for s in seats):
        return [s.bot_name for s in sorted(seats, key=lambda s: s.seat)]
    ordered = sorted(seats, key=lambda s: (s.rank is None, s.rank or 0, s.seat))
    parts = []
    for s in ordered:
        text = s.bot_name if s.rank is None else f"{s.rank}. {s.bot_name}"
        if s.total is not None:
            text += f" {s.total}"
        if s.forfeited:
            text += " (forfeit)"
        parts.append(text)
    return parts


def pack(parts: Sequence[str], width: int) -> str:
    """`parts` joined by ", ", a new line rather than a part split between two."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            if lines:
                lines[-1] += ","
            lines.append(part)
    return "\n".join(lines)


def show_cmd(
    match_id: Annotated[str, typer.Argument(
        help="match id: the stored one (`cfarena matches`) or the one its bots were given "
        "(a tournament match's 16 hex digits, as a bot logs it)")],
    logs: Annotated[bool, typer.Option(
        "--logs", help="also print what each seat's bot process printed (stdout and stderr, "
        "as captured: the start and the end of a long output)")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="print JSON (as `matches --json`, with rules, rounds, luck, faults "
        "and each seat's output: its text with --logs)")] = False,
    db_url: str = DbOption,
) -> None:
    """One match: result, scores per round, luck, faults; each seat's output with --logs."""
    from cfarena.server.storage import MatchStatus  # (see matches_cmd)

    with database(db_url, create=False) as db:
        match_id = _stored_id(db, match_id)
        detail = db.get_match(match_id)
        seat_logs = db.seat_logs(match_id) if detail is not None else []
        finished = detail is not None and detail.match.status is MatchStatus.FINISHED
        log, log_problem = _log_for_luck(db, match_id) if finished else (None, None)
    if detail is None:
        fail(f"no match {match_id!r} (see `cfarena matches`)")
    if json_out:
        print_json(_detail_json(detail, seat_logs, log, logs))
        return
    m = detail.match
    out.print(Text.assemble((f"match {m.id}", "bold"), f"  {m.status.value}  seed {m.seed}"))
    if (given := _bot_match_id(m)) != m.id:
        out.print(Text(f"its bots were given the id {given}"))
    out.print(Text(f"rules: {rules_text(detail.rules)}"))  # wrapped between the pairs
    if m.reason:
        out.print(Text(f"reason: {printable(m.reason)}"))
    for table in score_tables(m.seats, detail.round_scores or [], out.width):
        out.print(table)
    if log is not None:
        out.print(luck_table(m.seats, log))
    elif log_problem is not None:
        out.print(Text(f"luck: not computed ({log_problem})"))
    for f in detail.faults:  # the detail is the bot's own input: no markup in it
        out.print(f"[red]fault[/] seat {f.seat} ({escape(f.bot_name)}) {f.kind.value} at turn "
                  f"{f.turn_id}: {escape(printable(f.detail))}")
    names = {s.seat: s.bot_name for s in m.seats}
    if not logs:
        for x in seat_logs:
            ended, hints = _seat_end(x)
            exit_line = f", {ended}" if ended else ""
            out.print(Text(f"seat {x.seat} ({names.get(x.seat, '?')}): "
                           f"{human_bytes(x.output_bytes)} of output{exit_line} — see --logs"),
                      soft_wrap=True)
            for hint in hints:
                out.print(Text(hint), soft_wrap=True)
        return
    if not seat_logs:
        out.print("no seat output stored for this match")
    for x in seat_logs:
        _print_seat_log(x, names.get(x.seat, "?"))


def _detail_json(detail: MatchDetail, seat_logs: Sequence[SeatLog],
                 log: Mapping[str, Any] | None, with_output: bool) -> dict[str, Any]:
    """`show --json`: the match as `matches --json` has it, with its rules, points per
    round, luck per seat (None if not computed), faults, log digest and seat outputs."""
    from cfarena.server.sprt.luck import seat_luck

    luck: list[dict[str, float]] | None = None
    if log is not None:
        ordered = sorted(detail.match.seats, key=lambda s: s.seat)
        try:
            luck = [{"luck": round(c, 3), "adjusted": round(a, 3)}
                    for c, a in seat_luck([s.total or 0 for s in ordered], log)]
        except ValueError:  # a log that does not replay: the text form says so
            luck = None
    return {
        **match_json(detail.match), "bot_match_id": _bot_match_id(detail.match),
        "rules": detail.rules, "round_scores": detail.round_scores,
        "luck": luck, "log_sha256": detail.log_sha256,
        "faults": [{"seat": f.seat, "bot": f.bot_name, "kind": f.kind.value,
                    "turn": f.turn_id, "detail": f.detail} for f in detail.faults],
        "seat_logs": [{"seat": x.seat, "output_bytes": x.output_bytes, "exit": x.exit,
                       **({"output": x.output} if with_output else {})} for x in seat_logs],
    }


def _bot_match_id(m: MatchInfo) -> str:
    from cfarena.match.bot_ids import bot_match_id

    return bot_match_id(m.id, m.tournament_id, m.seed, m.key)


def rules_text(options: Mapping[str, Any]) -> str:
    """Rule options as `key=value` pairs, the preset first: "preset=standard, spokes=4"."""
    keys = sorted(options, key=lambda k: (k != "preset", str(k)))
    return ", ".join(f"{k}={_plain(options[k])}" for k in keys) or "-"


def _plain(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def score_tables(seats: Sequence[SeatInfo], round_scores: Sequence[Sequence[int]],
                 width: int) -> list[Table]:
    """The result with each round's points: one table (a row per seat, a column per
    round) when that fits `width` whole; else the result, then the rounds as rows
    (a column per seat). Bot names are never shortened."""
    ordered = sorted(seats, key=lambda s: s.seat)
    rounds = len(round_scores)

    def rank(s: SeatInfo) -> str:
        return "-" if s.rank is None else str(s.rank) + (" (forfeit)" if s.forfeited else "")

    def total(s: SeatInfo) -> str:
        return "-" if s.total is None else str(s.total)

    wide = Table("seat")
    wide.add_column("bot", overflow="fold")
    for name in (*(f"R{i + 1}" for i in range(rounds)), "total", "rank"):
        wide.add_column(name)
    for s in ordered:
        wide.add_row(str(s.seat), Text(s.bot_name), *(str(r[s.seat]) for r in round_scores),
                     total(s), rank(s))
    if rounds == 0 or Console(width=10**4).measure(wide).maximum <= width:
        return [wide]
    result = Table("seat", "bot", "total", "rank")
    result.columns[1].overflow = "fold"
    for s in ordered:
        result.add_row(str(s.seat), Text(s.bot_name), total(s), rank(s))
    by_round = Table("round", *(f"seat {s.seat}" for s in ordered),
                     title="points per round", title_justify="left")
    for i, row in enumerate(round_scores):
        by_round.add_row(f"R{i + 1}", *(str(row[s.seat]) for s in ordered))
    return [result, by_round]


def _log_for_luck(db: Database, match_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """A finished match's game log for its luck table, or why there is none to use (a
    log whose digest does not match is not an error of `show`: the rest is shown)."""
    from cfarena.server.storage import StorageError

    try:
        return db.get_log(match_id), None
    except StorageError as exc:
        return None, str(exc)


def luck_table(seats: Sequence[SeatInfo], log: Mapping[str, Any]) -> Table | Text:
    """Each seat's points, the luck of its draws in points (positive: they saved it
    points) and its luck-adjusted total, as `cfarena sprt` scores them by default
    (docs/TESTING_BOTS.md); one line instead if the log cannot be replayed."""
    from cfarena.server.sprt.luck import seat_luck

    ordered = sorted(seats, key=lambda s: s.seat)
    try:  # a stored log replays (it was checked when stored); a damaged one is told
        lucks = seat_luck([s.total or 0 for s in ordered], log)
    except ValueError as exc:  # gamelog.LogError, an illegal move, a seat count
        return Text(f"luck: not computed, the game log does not replay ({exc})")
    table = Table("seat", "bot", "points", "luck", "adjusted", title="luck of the draws",
                  title_justify="left")
    table.columns[1].overflow = "fold"
    for s, (c, a) in zip(ordered, lucks, strict=True):
        table.add_row(str(s.seat), Text(s.bot_name), str(s.total), f"{c:+.1f}", f"{a:.1f}")
    return table


def _print_seat_log(log: SeatLog, bot: str) -> None:
    """A heading (seat, bot, how the process ended, how much it printed), then the output."""
    ended, hints = _seat_end(log)
    out.print()
    out.print(Text(f"── seat {log.seat} ({bot}): {ended or 'end not recorded'}; "
                   f"{human_bytes(log.output_bytes)} of output ──", style="bold"),
              soft_wrap=True)
    for hint in hints:
        out.print(Text(hint), soft_wrap=True)
    text = printable(log.output.replace("\r\n", "\n"), keep="\n\t")
    if not text:
        out.print(Text("(no output)", style="dim"))
        return
    # written as is: no markup, emoji codes, wrapping or tab expansion from rich
    out.file.write(text if text.endswith("\n") else text + "\n")
    out.file.flush()


def _seat_end(log: SeatLog) -> tuple[str, list[str]]:
    """How a seat's process ended, as stored (`match_room.seat_end`): its first line
    (the arena's, quoting the bot's words behind `bot> `) and the lines after it (the
    arena's hints, each a line of its own), with control characters shown."""
    first, *hints = (log.exit or "").split("\n")
    return printable(first), [printable(hint) for hint in hints]


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
    match_id: Annotated[str | None, typer.Argument(
        help="match id (or the id its bots were given)", metavar="MATCH")] = None,
    tournament: Annotated[int | None, typer.Option(
        "--tournament", "-t", help="every game log of this tournament instead, as JSON Lines "
        "(a log a line)")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file (default stdout)")
                      ] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", help="json (default), html (the viewer) or txt (the printed replay); "
        "by default from the file suffix")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", help="txt and html: as this seat saw it (html: that view only)")
                    ] = None,
    db_url: str = DbOption,
) -> None:
    """Write a match's game log as JSON (format: docs/gamelog.md), or as HTML/text.

    The JSON is one line; `--tournament ID` writes every log of a tournament, a
    line each (JSON Lines, the lines `export MATCH` writes), which `verify --file`
    and `replay --file FILE MATCH` read.
    """
    if fmt is not None and fmt not in ("json", "html", "txt"):
        fail("--format must be json, html or txt")
    if (match_id is None) == (tournament is None):
        fail("give a MATCH id or --tournament ID (one of them)")
    if tournament is not None:
        if fmt not in (None, "json") or seat is not None:
            fail("--tournament writes JSON Lines: no --format html/txt, no --seat")
        check_id("--tournament", tournament)
        _export_tournament(tournament, output, db_url)
        return
    assert match_id is not None
    from cfarena.server.replay import export_log, log_line  # (see matches_cmd)

    with database(db_url, create=False) as db:
        log = db.get_log(_stored_id(db, match_id))
    if log is None:
        fail(f"no game log for match {match_id!r}")
    if output is None:
        if fmt not in (None, "json"):
            fail("--format html/txt needs --output FILE")
        sys.stdout.write(log_line(log) + "\n")
        return
    kind = fmt or output.suffix.lstrip(".").lower() or "html"
    if kind not in ("json", "html", "htm", "txt"):
        fail(f"--output {output}: cannot tell the format from {output.suffix!r}: "
             "give --format json, html or txt")
    players = int(log.get("players", 0))
    if seat is not None and not 0 <= seat < players:
        fail(f"--seat must be 0..{players - 1} for this {players}-player match")
    write_output("--output", output, lambda: export_log(log, output, fmt=kind, seat=seat))
    out.print(f"wrote {output}")


def _export_tournament(tournament: int, output: Path | None, db_url: str) -> None:
    """Every game log of `tournament` as JSON Lines to `output` (stdout if None), read
    from the database a batch at a time. A file appears only whole: it is written
    under a temporary name beside it, then renamed."""
    from cfarena.server.replay import log_lines  # (see matches_cmd)

    with database(db_url, create=False) as db:
        if db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament} (see `cfarena tournaments`)")
        if output is None:
            sys.stdout.writelines(log_lines(db.game_logs(tournament)))
            return
        part = output.with_name(f".{output.name}.part")
        try:
            written = 0
            with part.open("w", encoding="utf-8") as f:
                for line in log_lines(db.game_logs(tournament)):
                    f.write(line)
                    written += 1
            part.replace(output)
        except OSError as exc:
            fail(f"--output {output}: cannot write: {exc.strerror or exc}")
        finally:
            part.unlink(missing_ok=True)
    out.print(f"wrote {output} ({written} game logs)")


def register(app: typer.Typer) -> None:
    app.command("matches")(matches_cmd)
    app.command("show")(show_cmd)
    app.command("export")(export_cmd)
