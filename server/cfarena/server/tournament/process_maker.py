"""How a pool's bot processes are made: the command, the environment (an allow-list),
what a sandbox shows; a fresh process, or a fork server for a Python SDK bot.

Python SDK bots (`python -m cfarena.sdk run ...`, the bundled bots among them)
are forked, in a sandbox whose fork server has their runtime loaded
(`forks.py`); a command with shell syntax, or any bot outside a sandbox, runs
as a fresh process each time.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from cfarena.bots import BUNDLED
from cfarena.server.bundled_bots import bundled_command
from cfarena.server.referee import RefereeServer
from cfarena.server.sandbox import (
    SOCKET_IN_SANDBOX,
    BotProcess,
    LimitWatch,
    SandboxLimits,
    command_paths,
    python_paths,
)
from cfarena.server.tournament.forks import ForkPlan, ForkServer, fork_plan

_SHELL = set(";|&<>$`()*?[]{}~\\'\"\n")


def sdk_plan(name: str, command: str | None) -> ForkPlan | None:
    """How a fork server runs `name`, or None when the command is not a plain SDK bot
    command on the arena's own interpreter."""
    if command is None:
        return fork_plan(bot_argv(name, None))
    if any(c in _SHELL for c in command):
        return None  # shell syntax: run it as written
    return fork_plan(shlex.split(command))


def bot_argv(name: str, command: str | None) -> list[str]:
    """The argv of a bot: a bundled bot by name, or a shell command line."""
    if command is None:
        return [*bundled_command(name), "--capacity", "1", "--retries", "3"]
    return ["/bin/sh", "-c", "exec " + command]


class ProcessMaker:
    """Makes (does not start) the processes of a pool's bots, which connect to
    `server`: `commands` maps each bot to its command line (None: a bundled bot),
    `settings` a bundled bot to its settings (`BotSpec.settings`)."""

    def __init__(self, server: RefereeServer, commands: Mapping[str, str | None], *,
                 sandbox: bool, limits: SandboxLimits, cwd: Path,
                 binds: tuple[Path, ...],
                 settings: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.server = server
        self.commands = dict(commands)
        # only what a bundled bot declares (`BundledBot.settings`), whatever was stored
        self.settings = {
            name: {key: value for key, value in values.items()
                   if self.commands.get(name, "") is None and name in BUNDLED
                   and key in BUNDLED[name].settings}
            for name, values in (settings or {}).items()}
        self.sandbox = sandbox
        self.limits = limits
        self.cwd = cwd
        self.extra_binds = binds

    def plan(self, name: str) -> ForkPlan | None:
        """How a fork server runs `name`; None: a fresh process each time."""
        return sdk_plan(name, self.commands[name]) if self.sandbox else None

    def binds(self, name: str) -> list[Path]:
        """What a sandbox of `name` is shown besides the system: the Python it runs on,
        the paths on its command line, the organiser's `--sandbox-bind`s."""
        command = bot_argv(name, self.commands[name])
        shown = command if self.commands[name] is None else \
            shlex.split(self.commands[name] or "")
        return [*python_paths(), *command_paths(shown, self.cwd), *self.extra_binds]

    def env(self, name: str, token: str) -> dict[str, str]:
        """The whole environment of a process of `name`: an allow-list, nothing of the
        referee's but a bundled bot's own settings."""
        env = {
            **self.settings.get(name, {}),
            "CFARENA_CAPACITY": "1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": "/tmp" if self.sandbox else os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "CFARENA_SERVER": f"unix:{SOCKET_IN_SANDBOX}" if self.sandbox
            else self.server.address,
        }
        if token:
            env["CFARENA_TOKEN"] = token
        return env

    def process(self, name: str, label: str, token: str) -> BotProcess:
        """A fresh process of `name` (in its own sandbox unless the pool has none),
        which connects with `token`."""
        return BotProcess(
            label, bot_argv(name, self.commands[name]), self.env(name, token),
            socket=self.server.unix_socket, binds=self.binds(name) if self.sandbox else [],
            limits=self.limits, sandbox=self.sandbox, workdir=self.cwd,
        )

    def fork_server(self, name: str, label: str, plan: ForkPlan,
                    watch: LimitWatch) -> ForkServer:
        """A fork server of `name` in its sandbox, which runs `plan`."""
        return ForkServer(
            name, label, self.env(name, ""), watch, plan.preload,
            arena_socket=self.server.unix_socket, binds=self.binds(name),
            limits=self.limits, workdir=self.cwd)
