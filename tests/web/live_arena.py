"""An arena with matches being played, for the pages' browser tests and benchmarks/web.py:
tests/web/arena.py's `WebArena` (`cfarena serve --http-port` as a subprocess, every
process in its own process group, stopped by it, also on failure) with the four sample
bots dialing in, each playing `concurrency` matches at once.

Matches last a few seconds (montecarlo thinks `mc_budget_ms` per decision), so that a
test can open a running match and follow it to its end while others finish.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.harness.serve import SAMPLES

from .arena import WebArena

POOL = "standard/4p"


def get_json(arena: WebArena, path: str) -> Any:
    reply = arena.get(path)
    assert reply.status == 200, (path, reply.status, reply.body[:500])
    return reply.json()


@contextmanager
def live_arena(directory: Path, db: str, *, rounds: int = 4, mc_budget_ms: int = 120,
               concurrency: int = 2) -> Iterator[WebArena]:
    """serve on `db` with the four samples playing 4-player standard matches of `rounds`
    rounds, `concurrency` at once (every bot in all of them: capacity = concurrency)."""
    directory.mkdir(parents=True, exist_ok=True)
    arena = WebArena(directory, db)
    try:
        arena.add_bots(list(SAMPLES))
        arena.serve("--players", "4", "--rule", f"rounds={rounds}",
                    "--concurrency", str(concurrency))
        for name, module in SAMPLES.items():
            arena.dial_in(name, module, f"127.0.0.1:{arena.port}", arena.tokens[name],
                          "--capacity", str(concurrency), "--retries", "50", "-q",
                          env={"CFARENA_MC_BUDGET_MS": str(mc_budget_ms)})
        yield arena
    finally:
        arena.stop_all()
