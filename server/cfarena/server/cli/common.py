"""Helpers shared by the CLI commands: errors with exit codes, the database, output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console

from cfarena.engine import Rules, RulesError
from cfarena.server.storage import DEFAULT_URL, Database, StorageError, open_database

USAGE_ERROR = 2
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DbOption = typer.Option(
    DEFAULT_URL, "--db", envvar="CFARENA_DB",
    help="database URL: sqlite:///FILE or postgresql+psycopg://USER:PW@HOST/DB",
)


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Print a one-line error to stderr and exit (2 = usage error)."""
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def database(url: str) -> Iterator[Database]:
    """Open the database or exit 2 with a one-line message."""
    try:
        db = open_database(url)
    except StorageError as exc:
        fail(str(exc))
    except Exception as exc:  # e.g. a malformed URL raising in SQLAlchemy
        fail(f"cannot open database {url}: {exc}")
    try:
        yield db
    except StorageError as exc:
        fail(str(exc), code=1)
    finally:
        db.close()


def build_rules(preset: str, overrides: Sequence[str]) -> Rules:
    """`--rules PRESET` plus `--rule KEY=VALUE` overrides, or exit 2 naming the option."""
    try:
        rules = Rules.preset(preset)
        options: dict[str, str] = {}
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                fail(f"--rule expects KEY=VALUE, got {item!r}")
            options[key.strip()] = value.strip()
        return rules.with_options(**options)
    except RulesError as exc:
        fail(str(exc))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
