"""An arena with matches being played, for the pages' browser tests and benchmarks/web.py:
tests/web/arena.py's `WebArena` (`cfarena serve --http-port` as a subprocess, every
process in its own process group, stopped by it, also on failure) with the four sample
bots dialing in, each playing `concurrency` matches at once.

Matches last a few seconds (montecarlo takes `mc_budget_ms` per decision), so that a
test can open a running match and follow it to its end while others finish. The
benchmark lets montecarlo think all that time (its CPU is part of the load measured);
the tests pass `montecarlo_pauses`: it searches 2 ms and pauses the rest
(tests/harness/slow_bots), the same pace without a busy core for the module's whole
life.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.harness.serve import SAMPLES
from tests.harness.slow_bots import slow_bot_class

from .arena import WebArena

POOL = "standard/4p"
SEARCH_MS = 2  # montecarlo's search when it pauses the rest of its time


def get_json(arena: WebArena, path: str) -> Any:
    reply = arena.get(path)
    assert reply.status == 200, (path, reply.status, reply.body[:500])
    return reply.json()


@contextmanager
def live_arena(directory: Path, db: str, *, rounds: int = 4, mc_budget_ms: int = 120,
               concurrency: int = 2, montecarlo_pauses: bool = False
               ) -> Iterator[WebArena]:
    """serve on `db` with the four samples playing 4-player standard matches of `rounds`
    rounds, `concurrency` at once (every bot in all of them: capacity = concurrency);
    montecarlo takes `mc_budget_ms` a decision, searching (or, `montecarlo_pauses`,
    pausing all but 2 ms of it)."""
    directory.mkdir(parents=True, exist_ok=True)
    arena = WebArena(directory, db)
    budget_ms, bots = mc_budget_ms, dict(SAMPLES)
    if montecarlo_pauses:
        budget_ms = min(mc_budget_ms, SEARCH_MS)
        bots["montecarlo"] = slow_bot_class(directory, "montecarlo",
                                            (mc_budget_ms - budget_ms) / 1000)
    try:
        arena.add_bots(list(SAMPLES))
        arena.serve("--players", "4", "--rule", f"rounds={rounds}",
                    "--concurrency", str(concurrency))
        for name, module in bots.items():
            arena.dial_in(name, module, f"127.0.0.1:{arena.port}", arena.tokens[name],
                          "--capacity", str(concurrency), "--retries", "50", "-q",
                          env={"CFARENA_MC_BUDGET_MS": str(budget_ms)})
        yield arena
    finally:
        arena.stop_all()
