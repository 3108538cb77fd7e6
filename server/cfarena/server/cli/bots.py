"""`cfarena bots`: register, list, rotate, revoke and show the bots of `cfarena serve`."""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer
from rich.table import Table

from cfarena.server.bot_names import bot_name_problem
from cfarena.server.cli.bot_report import print_bot_report
from cfarena.server.cli.common import (
    DbOption,
    database,
    fail,
    out,
    print_json,
)
from cfarena.server.credentials import hash_token, new_token
from cfarena.server.standings import bot_report
from cfarena.server.storage import BotNameTaken, StorageError

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
    quiet: Annotated[bool, typer.Option("--quiet", help="print nothing")] = False,
    db_url: str = DbOption,
) -> None:
    """Register a bot and print its new token (shown once; only its hash is stored)."""
    problem = bot_name_problem(name)
    if problem is not None:
        fail(problem)
    if token is not None and len(token) < 8:
        fail("--token must be at least 8 characters")
    secret = token or new_token()
    with database(db_url) as db:
        try:
            registered = db.register_bot(name, hash_token(secret), command)
        except BotNameTaken:
            _bot_exists(name)
    if quiet:
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
    # its token is only stored hashed: it cannot be shown again, nor a new one issued yet
    fail(f"bot {name!r} already exists (its token was shown when it was added and cannot "
         "be shown again): remove it or pick another name")


@bots_app.command("list")
def bots_list(db_url: str = DbOption) -> None:
    """List registered bots."""
    with database(db_url, create=False) as db:
        table = Table("id", "name", "command", "registered", "token")
        for b in db.list_bots():
            token = ("revoked" if b.revoked_at is not None else
                     f"rotated {b.token_changed_at:%Y-%m-%d %H:%M}" if b.token_changed_at
                     else "")
            table.add_row(str(b.id), b.name, b.command or "", f"{b.created_at:%Y-%m-%d %H:%M}",
                          token)
        out.print(table)


@bots_app.command("rotate")
def bots_rotate(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    db_url: str = DbOption,
) -> None:
    """Give a bot a new token and print it (shown once). The old one stops working:
    a running `serve` closes its connections within about a second. A revoked bot
    is admitted again with the new token."""
    secret = new_token()
    with database(db_url, create=False) as db:
        try:
            db.rotate_token(name, hash_token(secret))
        except StorageError as exc:
            fail(str(exc))
    out.print(f"bot {name!r} has a new token; the old one no longer works. "
              "Its token, shown only now:")
    print(secret)


@bots_app.command("revoke")
def bots_revoke(
    name: Annotated[str, typer.Argument(help="the bot's name")],
    db_url: str = DbOption,
) -> None:
    """Revoke a bot's token: no new connection is admitted, and a running `serve`
    closes its live ones (UNAUTHENTICATED "token revoked") within about a second.
    `cfarena bots rotate NAME` admits it again with a new token."""
    with database(db_url, create=False) as db:
        try:
            db.revoke_bot(name)
        except StorageError as exc:
            fail(str(exc))
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
    with database(db_url, create=False) as db:
        try:
            report = bot_report(db, name, pool, faults)
        except StorageError as exc:
            fail(str(exc))
    if json_out:
        print_json(report)
        return
    print_bot_report(report)


def register(app: typer.Typer) -> None:
    app.add_typer(bots_app, name="bots")
