"""The `cfarena` command line (typer)."""

from __future__ import annotations

import logging

import typer

from cfarena.server.cli import inspect, play, replay, serve

app = typer.Typer(
    name="cfarena",
    help="cfarena: an arena where Chicken Foot bots play each other and get ranked.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
play.register(app)
serve.register(app)
inspect.register(app)
replay.register(app)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()


__all__ = ["app", "main"]
