"""`cfarena bots`: register, list, rotate, revoke and show the bots of `cfarena serve`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from cfarena.server.bot_names import bot_name_problem
from cfarena.server.cli.bot_report import print_bot_report
from cfarena.server.cli.common import (
    USAGE_ERROR,
    DbOption,
    check_id,
    database,
    fail,
    light_table,
    out,
    print_json,
)
from cfarena.server.credentials import hash_token, new_token

if TYPE_CHECKING:
    from cfarena.server.storage import BotInfo

JsonOption = typer.Option("--json", help="print JSON (a token, if any, in it: stdout only)")

bots_app = typer.Typer(help="Register, list, rotate, revoke and show bots (for `cfarena serve`).",
                       no_args_is_help=True)


@bots_app.command("add")
def bots_add(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    command: Annotated[str | None, typer.Option("--command", help="how to start it (notes)")
                       ] = None,
    token: Annotated[str | None, typer.Option(
        "--token", help="use this token instead of a new random one (e.g. from a secret); "
        "registering the same name and token again is a no-op")] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="as --token, read from this file (surrounding whitespace "
        "dropped): a secret kept off the command line, where `ps` shows it")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="print nothing")] = False,
    json_out: Annotated[bool, JsonOption] = False,
    db_url: str = DbOption,
) -> None:
    """Register a bot and print its new token (shown once; only its hash is stored).

    With --json: {"id", "name", "added" (false: registered already with this
    token), "token" (the new token; null with --token)}."""
    problem = bot_name_problem(name)
    if problem is not None:
        fail(problem)
    if token is not None and token_file is not None:
        fail("give --token or --token-file, not both")
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--token-file {token_file}: cannot read it ({exc})")
    if token is not None and len(token) < 8:
        fail("--token must be at least 8 characters")
    secret = token or new_token()
    # imported when the command runs, as the database is (common.database): SQLAlchemy
    # and the standings would make every `cfarena bots ... --help` take a second
    from cfarena.server.storage import BotNameTaken

    with database(db_url) as db:
        try:
            registered = db.register_bot(name, hash_token(secret), command)
        except BotNameTaken:
            _bot_exists(name)
    if quiet:
        return
    if json_out:
        print_json({"id": registered.bot_id, "name": name, "added": registered.added,
                    "token": secret if token is None else None})
        return
    if not registered.added:  # the same name and --token again: nothing to do
        out.print(f"bot {name!r} is already registered with this token "
                  f"(id {registered.bot_id}).")
        return
    out.print(f"bot {name!r} registered (id {registered.bot_id}).")
    if token is None:
        out.print("Its token, shown only now:")
        print(secret)


def _bot_exists(name: str) -> NoReturn:
    # its token is only stored hashed: it cannot be shown again
    fail(f"bot {name!r} already exists (its token was shown when it was added and cannot "
         f"be shown again): give it a new one with `cfarena bots rotate {name}`, or pick "
         "another name")


@bots_app.command("list")
def bots_list(json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
              db_url: str = DbOption) -> None:
    """List registered bots."""
    with database(db_url, create=False) as db:
        bots = db.list_bots()
    if json_out:
        print_json([_bot_json(b) for b in bots])
        return
    # the five columns fit in 80: a name of up to 40 characters on one line, the
    # command wrapped beside it, neither ever cut
    table = light_table()
    table.add_column("id", justify="right")
    table.add_column("name", overflow="fold",
                     width=min(40, max((len(b.name) for b in bots), default=4)))
    table.add_column("command", overflow="fold")
    table.add_column("registered", no_wrap=True)
    table.add_column("token", no_wrap=True)
    for b in bots:  # days only (--json has the times)
        token = ("revoked" if b.revoked_at is not None else
                 f"rotated\n{b.token_changed_at:%Y-%m-%d}" if b.token_changed_at else "")
        table.add_row(str(b.id), b.name, b.command or "", f"{b.created_at:%Y-%m-%d}", token)
    out.print(table)


def _bot_json(b: BotInfo) -> dict[str, Any]:
    """A bot as `--json` prints it (never its token's hash)."""
    return {"id": b.id, "name": b.name, "command": b.command, "created_at": b.created_at,
            "revoked_at": b.revoked_at, "token_changed_at": b.token_changed_at}


@bots_app.command("rotate")
def bots_rotate(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    tournament: Annotated[int | None, typer.Option(
        "--tournament", "-t", help="that tournament's entrant NAME: a web key for the "
        "entrant's pages (/me), not a token for serve")] = None,
    json_out: Annotated[bool, JsonOption] = False,
    db_url: str = DbOption,
) -> None:
    """Give a bot a new token and print it (shown once). The old one stops working:
    a running `serve` closes its connections within about a second. A revoked bot
    is admitted again with the new token. With --json: the bot and its "token".

    With --tournament ID: a web key for that tournament's entrant NAME (its processes
    are the arena's, so it has no token of its own), with which the entrant signs in
    to the web page's /me and sees its own matches, output and games; a new key ends
    the sessions of the old one."""
    check_id("--tournament", tournament)
    secret = new_token()
    with database(db_url, create=False, storage_code=USAGE_ERROR) as db:
        bot = db.rotate_token(name, hash_token(secret), tournament)
    if json_out:
        print_json({**_bot_json(bot), "token": secret})
        return
    if tournament is not None:
        out.print(f"tournament {tournament}'s entrant {name!r} has a new web key (for the "
                  "web page's /me); the old one no longer works. Its key, shown only now:")
    else:
        out.print(f"bot {name!r} has a new token; the old one no longer works. "
                  "Its token, shown only now:")
    print(secret)


@bots_app.command("revoke")
def bots_revoke(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    db_url: str = DbOption,
) -> None:
    """Revoke a bot's token: no new connection is admitted, and a running `serve`
    closes its live ones (UNAUTHENTICATED "token revoked") within about a second.
    `cfarena bots rotate NAME` admits it again with a new token."""
    with database(db_url, create=False, storage_code=USAGE_ERROR) as db:
        bot = db.revoke_bot(name)
    if json_out:
        print_json(_bot_json(bot))
        return
    out.print(f"bot {name!r} revoked.")


@bots_app.command("show")
def bots_show(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    pool: Annotated[str, typer.Option("--pool", help='rating pool, e.g. "standard/4p"')
                    ] = "global",
    faults: Annotated[int, typer.Option("--faults", help="how many recent faults")] = 20,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    db_url: str = DbOption,
) -> None:
    """What a bot's owner may see: its versions (with their ratings), its latest faults
    with their exact reasons, its decision times (median, p99) per version."""
    if faults < 0:
        fail(f"--faults must be 0 or more, got {faults}")
    from cfarena.server.standings import bot_report  # (see bots_add)

    with database(db_url, create=False, storage_code=USAGE_ERROR) as db:
        report = bot_report(db, name, pool, faults)
    if json_out:
        print_json(report)
        return
    print_bot_report(report)


def register(app: typer.Typer) -> None:
    app.add_typer(bots_app, name="bots")
