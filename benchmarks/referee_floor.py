#!/usr/bin/env python3
"""The referee's ceiling: its stream path with no engine and no encoding.

Same trivial bots as benchmarks/referee.py (one subprocess, one stream per bot,
C matches in flight on each), but each of the C lanes only posts a canned Turn
(the median Turn of a short real run, re-addressed to the lane) through
BotConnection.expect/post and waits for the Action, seat after seat. No rules
engine, no observation, no encoding: what is left is gRPC, the outbox and
Action routing. Printed next to the raw ping-pong of the same Turn, as in
benchmarks/referee.py. If this ratio is near a target, the full referee cannot
reach it by trimming its Python work alone.

    python benchmarks/referee_floor.py [--seconds 5] [--concurrency 8] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from referee import _spawn, _stop, raw_rate, referee_rate

from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.v1 import arena_pb2 as pb


async def floor_rate(concurrency: int, seconds: float, turn: bytes) -> tuple[float, float]:
    """(decisions/s, referee process CPU µs per decision) with canned Turns."""
    tokens = TokenRegistry()
    tokens.add("a", "tok-a")
    tokens.add("b", "tok-b")
    server = RefereeServer(tokens)
    await server.start()
    proc = _spawn("referee", server.address, "tok-a", "tok-b", "--capacity", str(concurrency))
    decisions = 0
    try:
        await server.wait_for_bots(["a", "b"], 30)
        conns = [next(c for c in server.connections() if c.bot_name == b) for b in "ab"]
        stop_at = time.perf_counter() + seconds

        async def lane(i: int) -> None:
            nonlocal decisions
            match_id = f"f{i}"
            msg = pb.RefereeMessage.FromString(turn)
            msg.turn.match_id = match_id
            msg.turn.turn_id = 1
            data = msg.SerializeToString()
            for seat, conn in enumerate(conns):
                conn.matches[match_id] = seat
            while time.perf_counter() < stop_at:
                for conn in conns:
                    pending = conn.expect(match_id, 1)
                    conn.post(match_id, data)
                    await pending.future
                    decisions += 1

        started, cpu_started = time.perf_counter(), time.process_time()
        await asyncio.gather(*(lane(i) for i in range(concurrency)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        _stop(proc)
        await server.stop(grace=1)
    return decisions / elapsed, cpu / max(1, decisions) * 1e6


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ns = ap.parse_args()
    turn = (await referee_rate(ns.concurrency, 2.0))["turn"]
    for _ in range(ns.repeat):
        rate, cpu_us = await floor_rate(ns.concurrency, ns.seconds, turn)
        raw = await raw_rate(ns.concurrency, ns.seconds, turn)
        print(f"concurrency {ns.concurrency}: referee without engine/encoding {rate:,.0f} "
              f"decisions/s ({cpu_us:.0f} µs CPU/decision); raw ping-pong {raw:,.0f} "
              f"round trips/s; ratio {rate / raw:.0%}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
