#!/usr/bin/env python3
"""The referee's own CPU per bot decision, without gRPC: a steady figure to optimise by.

benchmarks/referee.py measures rates through real gRPC against a client
process, and on a shared 2-core machine those swing by ±25% from run to run.
This runs the real MatchRunner (engine, observation, Turn encoding, time
control, routing, records) with C concurrent 2-player matches, but its
connections write into an in-process fake bot that parses each Turn and
answers move 0 on the next loop iteration. What it prints is process CPU per
decision, best of `--repeat` runs: the part of benchmarks/referee.py's cost
that is ours rather than gRPC's (the fake bot's parse, a few µs, included).

    python benchmarks/referee_cpu.py [--matches 64] [--concurrency 8] [--repeat 3]
                                     [--no-metrics]

By default the runners report to an `ArenaMetrics` observer, as under
`cfarena serve` (--no-metrics: no observer, as under run-tournament).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from cfarena.engine import Rules
from cfarena.match.record import TimeControl
from cfarena.server.ops.metrics import ArenaMetrics
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.match_runner import MatchRunner
from cfarena.v1 import arena_pb2 as pb

RULES = Rules.preset("standard")


class _InstantBot:
    """A connection's writer that answers every Turn with move 0 on the next loop pass."""

    def __init__(self) -> None:
        self.conn: BotConnection | None = None

    async def write(self, message: Any) -> None:
        if self.conn is None or not isinstance(message, bytes) or message[:1] != b"\x1a":
            return  # only Turns (RefereeMessage field 3) arrive pre-encoded as bytes
        turn = pb.RefereeMessage.FromString(message).turn
        action = pb.Action(match_id=turn.match_id, turn_id=turn.turn_id, move_index=0)
        asyncio.get_running_loop().call_soon(self.conn.on_action, action)


async def run(matches: int, concurrency: int, metrics: ArenaMetrics | None = None
              ) -> tuple[int, float]:
    """(decisions, process CPU seconds) for `matches` matches, `concurrency` at a time."""
    conns = []
    for name in ("a", "b"):
        bot = _InstantBot()
        bot.conn = BotConnection(name, matches, bot)
        conns.append(bot.conn)
    ids = iter(range(10**9))
    decisions = 0

    async def lane(count: int) -> None:
        nonlocal decisions
        for _ in range(count):
            match_id = f"m{next(ids)}"
            for seat, conn in enumerate(conns):
                conn.matches[match_id] = seat
            runner = MatchRunner(match_id, RULES, next(ids), conns, ["a", "b"],
                                 TimeControl(5000))
            if metrics is not None:
                metrics.match_started(match_id)
            record = await runner.run()
            if metrics is not None:
                metrics.match_ended(record)
            decisions += sum(1 for action in record.actions if action.decided)

    started = time.process_time()
    await asyncio.gather(*(lane(matches // concurrency) for _ in range(concurrency)))
    return decisions, time.process_time() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--matches", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-metrics", action="store_true", help="no metrics observer")
    ns = ap.parse_args()
    best = float("inf")
    decisions = 0
    for _ in range(ns.repeat):
        metrics = None if ns.no_metrics else ArenaMetrics()
        decisions, cpu = asyncio.run(run(ns.matches, ns.concurrency, metrics))
        best = min(best, cpu / decisions * 1e6)
    print(f"referee without gRPC: {decisions:,} decisions per run, "
          f"best {best:.1f} µs CPU per decision ({ns.concurrency} concurrent 2-player matches"
          f"{', no metrics' if ns.no_metrics else ', metrics on'})")


if __name__ == "__main__":
    main()
