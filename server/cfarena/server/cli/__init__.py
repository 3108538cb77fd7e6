"""The `cfarena` command line (typer)."""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import logging
import resource
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import typer
import typer.main
from typer._click.core import Command, Context
from typer.core import TyperArgument, TyperCommand, TyperGroup

from cfarena.server.cli.common import OneLineErrors


@dataclass(frozen=True, slots=True)
class Entry:
    """One command of `cfarena`: the modules of `cfarena.server.cli` whose `register`
    makes it, and the first paragraph of its help (what `cfarena --help` lists)."""

    modules: tuple[str, ...]
    summary: str


# every command, in the order `cfarena --help` lists them (tests/cli check each
# summary against the command's own help)
COMMANDS: dict[str, Entry] = {
    "run-tournament": Entry(("tournament",), "Run a round-robin between bots on a local "
                            "referee and print the standings."),
    "sprt": Entry(("sprt",), "Test whether NEW is better than OLD: a sequential test (SPRT) "
                  "on duplicate deal groups."),
    "sprt-tests": Entry(("sprt",), "List bot tests (`cfarena sprt`) with their state, "
                        "verdict, matches and LLR."),
    "serve": Entry(("serve",), "Run the competition ladder for bots registered with "
                   "`cfarena bots add`."),
    "standings": Entry(("standings",), "Standings: a pool's ladder as the web page shows "
                       "it; a tournament's per-bot\nBradley-Terry fit; `--matrix`: every "
                       "pair's head-to-head Elo difference."),
    "matches": Entry(("matches",), "List matches, newest first."),
    "show": Entry(("matches",), "One match: result, scores per round, luck, faults; "
                  "each seat's output with --logs."),
    "export": Entry(("matches",), "Write a match's game log as JSON (format: "
                    "docs/gamelog.md), or as HTML/text."),
    "publish": Entry(("publish",), "Write a finished tournament's results as a static "
                     "site: the web page's results\npage with no server."),
    "replay": Entry(("replay",), "Step through a logged game: n/space next, p previous, r/R "
                    "next/previous round, q quit."),
    "verify": Entry(("replay",), "Re-simulate logged matches from seed, rules and "
                    "decisions; report any difference."),
    "worker": Entry(("worker",), "Play tournament matches from a PostgreSQL database, on "
                    "this machine's referee with\nits own sandboxed bot processes (the "
                    "bots' commands must exist here). Start as many\nas you like, on any "
                    "machines; kill one and its matches are played again by another."),
    "bots": Entry(("bots",), "Register, list, rotate, revoke and show bots (for "
                  "`cfarena serve`)."),
    # `tournaments create` is registered by the tournament module
    "tournaments": Entry(("tournament",), "List tournaments with their "
                         "progress (`create`: schedule one for workers)."),
}


class LazyCommands(OneLineErrors):
    """The `cfarena` group, which imports a command's module only when that command
    runs or shows its help: its own help lists the commands from `COMMANDS`, so
    `cfarena --help` loads none of them (nor SQLAlchemy, gRPC, uvicorn)."""

    listing = False  # True while the group's own help is written

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # stand-ins: what the help lists, and the names a typo is matched against
        self.commands = {name: TyperCommand(name, help=entry.summary)
                         for name, entry in COMMANDS.items()}

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None or self.listing:
            return self.commands.get(cmd_name)
        return _loaded(entry.modules).commands[cmd_name]

    def format_help(self, ctx: Context, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


@cache
def _loaded(modules: tuple[str, ...]) -> TyperGroup:
    """The click group of the commands `modules` register, their flags shown bare."""
    sub = typer.Typer()
    sub.callback()(_nothing)  # a group even for a module with one command
    for name in modules:
        importlib.import_module(f"cfarena.server.cli.{name}").register(sub)
    group = typer.main.get_command(sub)
    assert isinstance(group, TyperGroup)
    _bare_flags(group)
    _collect_when_run(group)
    return group


def _collect_when_run(cmd: Any) -> None:
    """Turn the garbage collector back on (`main` turns it off) as `cmd` or one of its
    subcommands starts its work (`_collecting`): every callback, a group's too (a group
    may work itself, as `tournaments` lists them)."""
    for sub in getattr(cmd, "commands", {}).values():
        _collect_when_run(sub)
    if cmd.callback is not None:
        cmd.callback = _collecting(cmd.callback)


_F = TypeVar("_F", bound=Callable[..., Any])
# whether `main` turned the collector off for the start-up, until a callback runs
_starting = False


def _collecting(callback: _F) -> _F:
    """`callback`, run with the garbage collector on, as it is in any program. What was
    made before it (the modules, the parsed command line: some 100,000 objects, of which
    a few hundred are garbage) is first moved out of the collector's sight (`gc.freeze`):
    it lives as long as the process, and every full collection would walk it again, as
    would the collections at exit (about 0.25 s of CPU of a short command; a `serve`
    running for hours collects as usual, among its own objects). The first callback to
    run does it, once; used in-process (tests, a program calling `command()`), where
    `main` did not turn the collector off, it changes nothing."""
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        global _starting
        if _starting:
            _starting = False
            gc.freeze()
            gc.enable()
        return callback(*args, **kwargs)
    return run  # type: ignore[return-value]


def _nothing() -> None:
    """A group's callback that does nothing."""


app = typer.Typer(
    name="cfarena",
    cls=LazyCommands,
    help="cfarena: an arena where Chicken Foot bots play each other and get ranked.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.callback()(_nothing)  # the commands come from LazyCommands, not from typer


def command() -> Any:
    """The click command of `app`, its flags shown bare in --help (`--json`, not
    `--json <bool>`: a flag takes no value)."""
    cmd = typer.main.get_command(app)
    _bare_flags(cmd)
    return cmd


def _bare_flags(cmd: Any) -> None:
    """Show `cmd`'s flags (and its subcommands') without a type, and make an absent
    `--help` False: typer passes a flag's None default through a pydantic adapter, so
    `cfarena replay --help` would load pydantic (0.2 s) for the group's unused flag."""
    params = list(cmd.params)
    help_option = cmd.get_help_option(cmd.context_class(cmd))  # made once, then reused
    if help_option is not None:
        help_option.default = False  # a bool, which typer takes as it is
        params.append(help_option)
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # what the help shows in place of the type
        if type(param) is TyperArgument:
            param.__class__ = _PlainArgument
            param.metavar = param.metavar or (param.name or "").upper()
    for sub in getattr(cmd, "commands", {}).values():
        _bare_flags(sub)


class _PlainArgument(TyperArgument):
    """An argument as click's usage lines name it: MATCH_ID, or [MATCH] when it may be
    left out (typer writes a required one in braces, `{match_id}`, which reads as a
    stray)."""

    def _usage_display_name(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


def main() -> None:
    # importing a command's modules makes ~100,000 objects that live as long as the
    # process, hardly any garbage, yet the collector would run some 200 times over them
    # while they load: off until the command's work begins (`_collecting`)
    global _starting
    _starting = True
    gc.disable()
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


__all__ = ["COMMANDS", "app", "command", "main"]
