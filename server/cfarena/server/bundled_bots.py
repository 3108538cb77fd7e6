"""How the referee runs a bundled bot (the registry itself is `cfarena.bots.BUNDLED`)."""

from __future__ import annotations

import sys

from cfarena.bots import BUNDLED


def bundled_command(name: str) -> list[str]:
    """The argv that runs the bundled bot `name` with this interpreter."""
    return [sys.executable, "-m", "cfarena.sdk", "run", BUNDLED[name].target]
