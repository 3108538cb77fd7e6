"""The bundled bots: one registry of their names, and how to run one."""

from __future__ import annotations

import sys

# Bundled bots: NAME -> the module `python -m cfarena.sdk run` loads.
BUNDLED_BOTS: dict[str, str] = {
    "random": "cfarena.bots.random_bot",
    "greedy": "cfarena.bots.greedy",
    "smart": "cfarena.bots.smart",
    "montecarlo": "cfarena.bots.montecarlo",
}


def bundled_command(name: str) -> list[str]:
    """The argv that runs a bundled bot with this interpreter."""
    return [sys.executable, "-m", "cfarena.sdk", "run", BUNDLED_BOTS[name]]
