"""Sample bots for cfarena, each runnable as `python -m cfarena.sdk run cfarena.bots.MODULE`.

`BUNDLED` is the one registry of the bundled bots: the referee's
`run-tournament` (its `--bot NAME`, its help text and its default line-up),
the bot processes it starts and the benchmarks all derive from it. Importing
this package imports no bot: `make_bot` loads one when asked.

A bundled bot's `settings` are the variables of the organiser's environment it
reads (montecarlo's thinking budget). A tournament takes their values when it
is created and gives them to that bot's processes, and to no other bot's (a bot's
environment is otherwise an allow-list); the bot's module checks them first
(`settings_problem`).

- random (`cfarena.bots.random_bot.RandomBot`): a uniformly random legal move, seeded per match.
- greedy (`cfarena.bots.greedy.GreedyBot`): the heaviest playable tile first.
- smart (`cfarena.bots.smart.SmartBot`): the best move by a hand-tuned heuristic.
- montecarlo (`cfarena.bots.montecarlo.MonteCarloBot`): determinized rollouts within a time budget.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cfarena.sdk import Bot


@dataclass(frozen=True, slots=True)
class BundledBot:
    """One bundled bot: its short name, the module `python -m cfarena.sdk run` loads, its class."""

    name: str
    module: str
    class_name: str
    # variables of the organiser's environment the bot reads; its module then defines
    # `settings_problem(values: Mapping[str, str]) -> str | None`
    settings: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """The `python -m cfarena.sdk run` target: "module:Class"."""
        return f"{self.module}:{self.class_name}"


BUNDLED: Mapping[str, BundledBot] = MappingProxyType({
    bot.name: bot
    for bot in (
        BundledBot("random", "cfarena.bots.random_bot", "RandomBot"),
        BundledBot("greedy", "cfarena.bots.greedy", "GreedyBot"),
        BundledBot("smart", "cfarena.bots.smart", "SmartBot"),
        BundledBot("montecarlo", "cfarena.bots.montecarlo", "MonteCarloBot",
                   settings=("CFARENA_MC_BUDGET_MS",)),
    )
})


def bundled_names() -> str:
    """The bundled bots' names, "random, greedy, ..." (for help texts and errors)."""
    return ", ".join(BUNDLED)


def make_bot(name: str) -> Bot:
    """A fresh instance of the bundled bot `name` (ValueError naming the known ones)."""
    bot = BUNDLED.get(name)
    if bot is None:
        raise ValueError(f"no bundled bot {name!r} (bundled: {bundled_names()})")
    cls: type[Bot] = getattr(importlib.import_module(bot.module), bot.class_name)
    return cls()


def settings_problem(name: str, values: Mapping[str, str]) -> str | None:
    """Why the bundled bot `name` cannot run with `values` of its settings (one line), or
    None. Its module is loaded only if a setting is given."""
    bot = BUNDLED.get(name)
    if not values or bot is None or not bot.settings:
        return None
    module = importlib.import_module(bot.module)
    check: Callable[[Mapping[str, str]], str | None] = module.settings_problem
    return check(values)


__all__ = ["BUNDLED", "BundledBot", "bundled_names", "make_bot", "settings_problem"]
