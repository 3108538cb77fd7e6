"""What a sandbox shows of the host: the paths a bot needs, and a check that no secret
(the organiser's database, its log directory) is among them."""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

from cfarena.server.sandbox.bubblewrap import ETC_FILES, SYSTEM_DIRS


def python_paths() -> list[Path]:
    """What this interpreter needs to run: its prefixes and every import path that exists."""
    found: list[Path] = []
    for entry in (sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"],
                  *sys.path):
        if entry and os.path.isabs(entry) and os.path.exists(entry):
            found.append(Path(entry))
    exe = Path(sys.executable)
    found.append(exe.parent)
    with contextlib.suppress(OSError):
        found.append(exe.resolve().parent.parent)
    return found


def named_paths(binds: Iterable[Path]) -> list[str]:
    """The paths among a sandbox's `binds` that are not Python's (`python_paths`): those
    its command line named and the organiser's binds, once each, in order."""
    python = {str(p) for p in python_paths()}
    named: list[str] = []
    for path in map(str, binds):
        if path not in python and path not in named:
            named.append(path)
    return named


def command_paths(argv: Sequence[str], cwd: Path) -> list[Path]:
    """Files and directories named on a bot's command line (relative to `cwd`).

    Each argument (and the value of a `--flag=VALUE` argument) that names an
    existing path is shown to the sandbox read-only, also as `PATH:Name` (a file
    and a class in it: `python -m cfarena.sdk run bot.py:MyBot`); so is the
    program itself when it is given as a path.
    """
    paths: list[Path] = []
    for index, arg in enumerate(argv):
        for part in (arg, arg.partition("=")[2]) if index else (arg,):
            if not part or (index == 0 and "/" not in part):
                continue
            head, colon, name = part.rpartition(":")
            for text in (part, head) if colon and head and name.isidentifier() else (part,):
                candidate = Path(text) if os.path.isabs(text) else cwd / text
                with contextlib.suppress(OSError):
                    if candidate.exists():
                        paths.append(candidate.resolve())
                        break
    return paths


def shown_roots(binds: Iterable[Path]) -> list[str]:
    """Every host directory or file a sandbox with these binds can read (resolved)."""
    roots = [os.path.realpath(d) for d in SYSTEM_DIRS if os.path.exists(d)]
    roots += [os.path.realpath(f"/etc/{name}") for name in ETC_FILES
              if os.path.lexists(f"/etc/{name}")]
    return roots + [os.path.realpath(p) for p in binds]


def exposed(binds: Iterable[Path], secrets_: Iterable[Path]) -> tuple[str, str] | None:
    """(secret, shown root) for the first secret a sandbox with these binds could read.

    The organiser's database and log directory must lie outside everything a bot is
    shown; rather than mask them inside a shown directory (which misses files created
    later and paths reached through another name), the run refuses to start.
    """
    roots = shown_roots(binds)
    for secret in secrets_:
        real = os.path.realpath(secret)
        for root in roots:
            if real == root or real.startswith(root.rstrip("/") + "/") or \
                    root.startswith(real.rstrip("/") + "/"):
                return str(secret), root
    return None
