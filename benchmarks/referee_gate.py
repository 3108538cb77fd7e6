#!/usr/bin/env python3
"""What the gate on the referee's Unix socket (referee/gate.py) costs per decision.

The same referee, on a Unix socket, with and without the gate, back to back in one
run, `--repeat` times: C concurrent 2-player matches between the two trivial bots
of _trivial_client.py (one subprocess, one connection per bot), for `--seconds`
each. Printed per variant: decisions per second, and the referee process's CPU per
decision (all its threads; with the gate, the relay runs in the referee's event
loop, so its cost is in this figure). The medians and their ratio close the report.

    python benchmarks/referee_gate.py [--seconds 5] [--concurrency 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from referee import RULES, _spawn, _stop  # benchmarks/referee.py

from cfarena.server.referee import RefereeServer, TimeControl, TokenRegistry


async def rate(gated: bool, concurrency: int, seconds: float) -> dict[str, Any]:
    tokens = TokenRegistry()
    tokens.add("a", "tok-a")
    tokens.add("b", "tok-b")
    with tempfile.TemporaryDirectory(prefix="cfarena-bench-") as tmp:
        server = RefereeServer(tokens, port=None, unix_socket=Path(tmp) / "arena.sock",
                               gate=gated)
        await server.start()
        proc = _spawn("referee", server.address, "tok-a", "tok-b", "--capacity",
                      str(concurrency))
        decisions = 0
        try:
            await server.wait_for_bots(["a", "b"], 30)
            stop_at = time.perf_counter() + seconds
            counter = iter(range(10**9))

            async def lane() -> None:
                nonlocal decisions
                while time.perf_counter() < stop_at:
                    rec = await server.run_match(f"m{next(counter)}", RULES, next(counter),
                                                 ["a", "b"], TimeControl(5000))
                    decisions += sum(1 for act in rec.actions if act.decided)

            started, cpu_started = time.perf_counter(), time.process_time()
            await asyncio.gather(*(lane() for _ in range(concurrency)))
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        finally:
            _stop(proc)
            await server.stop(grace=1)
    return {"rate": decisions / elapsed, "cpu_us": cpu / max(1, decisions) * 1e6}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    found: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for i in range(ns.repeat):
        for gated in (False, True):  # back to back: a slow spell hits both alike
            result = await rate(gated, ns.concurrency, ns.seconds)
            found[gated].append(result)
            print(f"[{i + 1}/{ns.repeat}] {'gated  ' if gated else 'ungated'}: "
                  f"{result['rate']:,.0f} decisions/s, referee CPU "
                  f"{result['cpu_us']:.0f} µs/decision", flush=True)
    med = {g: (statistics.median(r["rate"] for r in rs),
               statistics.median(r["cpu_us"] for r in rs)) for g, rs in found.items()}
    print(f"median: ungated {med[False][0]:,.0f}/s {med[False][1]:.0f} µs; gated "
          f"{med[True][0]:,.0f}/s {med[True][1]:.0f} µs; gated/ungated: rate "
          f"{med[True][0] / med[False][0]:.0%}, CPU per decision "
          f"{med[True][1] / med[False][1]:.0%}")


if __name__ == "__main__":
    asyncio.run(main())
