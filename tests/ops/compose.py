"""docker-compose.yml and its entrypoint script (docker/entrypoint.sh), read for the
tests that check them without a Docker engine (tests/ops/test_compose.py,
tests/ops/test_arena_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
HOUSE_BOTS = ("random", "greedy", "smart", "montecarlo")


def services() -> dict[str, dict[str, Any]]:
    """The compose file's services, anchors and merge keys resolved."""
    loaded = yaml.safe_load(COMPOSE.read_text())
    found: dict[str, dict[str, Any]] = loaded["services"]
    return found
