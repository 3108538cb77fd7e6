"""The `cfarena` command line (typer)."""

from __future__ import annotations

import contextlib
import logging
import resource
from typing import Any

import typer
import typer.main

from cfarena.server.cli import inspection, replay, serve, tournament, worker
from cfarena.server.cli.common import OneLineErrors

app = typer.Typer(
    name="cfarena",
    cls=OneLineErrors,
    help="cfarena: an arena where Chicken Foot bots play each other and get ranked.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tournament.register(app)
serve.register(app)
inspection.register(app)
replay.register(app)
worker.register(app)


def command() -> Any:
    """The click command of `app`, its flags shown bare in --help (`--json`, not
    `--json <bool>`: a flag takes no value)."""
    cmd = typer.main.get_command(app)
    _bare_flags(cmd)
    return cmd


def _bare_flags(cmd: Any) -> None:
    params = list(cmd.params)
    help_option = cmd.get_help_option(cmd.context_class(cmd))  # made once, then reused
    if help_option is not None:
        params.append(help_option)
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # what the help shows in place of the type
    for sub in getattr(cmd, "commands", {}).values():
        _bare_flags(sub)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _raise_descriptor_limit()
    command()(prog_name="cfarena")


def _raise_descriptor_limit() -> None:
    """Open descriptors up to the hard limit: the referee holds three per bot connection
    and its gate's total is a share of this (a soft limit of 1024, common, would let
    ~20 sandboxes fill it); every sandbox gets its own small limit (--max-files)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


__all__ = ["app", "command", "main"]
