"""One registry of the bundled bots (`cfarena.bots.BUNDLED`), and everything derived from it."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cfarena.bots
from cfarena.bots import BUNDLED, bundled_names, make_bot
from cfarena.sdk import Bot
from cfarena.sdk.cli import load_bot_class
from cfarena.server.bundled_bots import bundled_command
from cfarena.server.cli import app
from cfarena.server.cli.tournament import DEFAULT_BOTS, parse_bot

BOTS_DIR = Path(cfarena.bots.__file__).parent


def test_every_bot_module_of_the_package_is_registered_once() -> None:
    # a new bot module is not forgotten: the Bot classes defined in cfarena/bots/*.py
    # are exactly the registry's
    defined = set()
    for path in sorted(BOTS_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module(f"cfarena.bots.{path.stem}")
        defined |= {
            (module.__name__, name) for name, obj in vars(module).items()
            if inspect.isclass(obj) and issubclass(obj, Bot) and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
        }
    assert defined == {(b.module, b.class_name) for b in BUNDLED.values()}
    assert all(name == bot.name for name, bot in BUNDLED.items())


@pytest.mark.parametrize("name", list(BUNDLED))
def test_the_runner_the_referee_starts_loads_the_registered_class(name: str) -> None:
    bot = BUNDLED[name]
    argv = bundled_command(name)
    assert argv[1:4] == ["-m", "cfarena.sdk", "run"] and argv[4] == bot.target
    cls = load_bot_class(argv[4])
    assert cls.__name__ == bot.class_name
    assert type(make_bot(name)) is cls


def test_unknown_names_are_refused_naming_the_bundled_ones() -> None:
    with pytest.raises(ValueError, match=f"bundled: {bundled_names()}"):
        make_bot("nobody")
    assert bundled_names() == ", ".join(BUNDLED)


def test_run_tournament_derives_its_line_up_help_and_errors_from_the_registry() -> None:
    assert tuple(BUNDLED) == DEFAULT_BOTS
    assert [parse_bot(name).name for name in BUNDLED] == list(BUNDLED)
    runner = CliRunner()
    shown = runner.invoke(app, ["run-tournament", "--help"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0
    assert f"NAME (bundled: {bundled_names()}) or NAME=COMMAND" in " ".join(shown.output.split())
    refused = runner.invoke(app, ["run-tournament", "--bot", "nobody", "--bot", "random"])
    assert refused.exit_code != 0
    assert f"no bundled bot of that name (bundled: {bundled_names()})" in (
        " ".join((refused.output + (refused.stderr if refused.stderr_bytes else "")).split())
    )
