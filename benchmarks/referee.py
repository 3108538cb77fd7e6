#!/usr/bin/env python3
"""Bot decisions per second through the referee vs. a raw gRPC ping-pong.

Both measured in the same run on 127.0.0.1 with trivial clients in one
subprocess running the same per-message code (_trivial_client.py: parse the
RefereeMessage, answer a Turn with move 0 of its match and turn_id): (1) the
referee running C concurrent 2-player matches between two trivial bots,
counting bot decisions per second; (2) a bare grpc.aio bidirectional echo with
C streams that answers every Action with the median-size Turn of run 1,
counting round trips per second. Same client code, same message sizes: the
ratio is what the referee costs over gRPC itself. The referee's process CPU
per decision (all threads, this process) is printed too: less noisy than the
rates on a busy machine, so compare variants by it as well. Also: 64
concurrent matches at a 1000 ms deadline, counting timeouts (there must be
none) and the slowest answer.

    python benchmarks/referee.py [--seconds 5] [--concurrency 1 8] [--repeat 3] [--streams 1]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc

from cfarena.engine import Rules
from cfarena.server.referee import RefereeServer, TimeControl, TokenRegistry
from cfarena.v1 import arena_pb2 as pb

CLIENT = str(Path(__file__).with_name("_trivial_client.py"))
RULES = Rules.preset("standard")


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, CLIENT, *args], start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def referee_rate(concurrency: int, seconds: float, timeout_ms: int = 5000,
                       streams: int = 1) -> dict[str, Any]:
    """Decisions/s with `concurrency` matches; each bot has `streams` connections."""
    tokens = TokenRegistry()
    tokens.add("a", "tok-a")
    tokens.add("b", "tok-b")
    server = RefereeServer(tokens)
    await server.start()
    samples: list[bytes] = []

    def keep(bot: str, mid: str, seat: int, data: bytes) -> None:
        if len(samples) < 5000 and data[:1] == b"\x1a":  # RefereeMessage.turn
            samples.append(data)

    server.on_send = keep
    capacity = max(1, -(-concurrency // streams))
    proc = _spawn("referee", server.address, "tok-a", "tok-b", "--capacity", str(capacity),
                  "--streams", str(streams))
    decisions = 0
    timeouts = 0
    slowest = 0.0
    try:
        await server.wait_for_bots(["a", "b"], 30)
        while min(server.connection_count("a"), server.connection_count("b")) < streams:
            await asyncio.sleep(0.05)
        stop_at = time.perf_counter() + seconds
        counter = iter(range(10**9))

        async def lane() -> None:
            nonlocal decisions, timeouts, slowest
            while time.perf_counter() < stop_at:
                rec = await server.run_match(f"m{next(counter)}", RULES, next(counter),
                                             ["a", "b"], TimeControl(timeout_ms))
                for act in rec.actions:
                    if act.decided:
                        decisions += 1
                        slowest = max(slowest, act.elapsed_ms or 0.0)
                timeouts += sum(1 for f in rec.faults if f.kind.value == "timeout")

        started = time.perf_counter()
        cpu_started = time.process_time()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    finally:
        _stop(proc)
        await server.stop(grace=1)
    samples.sort(key=len)
    median_turn = samples[len(samples) // 2] if samples else b""
    return {"rate": decisions / elapsed, "decisions": decisions, "timeouts": timeouts,
            "slowest_ms": slowest, "turn": median_turn,
            "cpu_us": cpu / max(1, decisions) * 1e6}


async def raw_rate(streams: int, seconds: float, reply: bytes) -> float:
    """Round trips/s of a bare echo replying with `reply` (a real Turn of run 1)."""
    count = 0

    async def ping(requests: Any, context: Any) -> Any:
        nonlocal count
        async for _ in requests:
            count += 1
            yield reply

    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(
        ping, request_deserializer=pb.BotMessage.FromString,
        response_serializer=lambda b: b)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Echo", {"Ping": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    proc = _spawn("raw", f"127.0.0.1:{port}", str(streams))
    try:
        await asyncio.sleep(1.0)  # connect and warm up
        start_count, started = count, time.perf_counter()
        await asyncio.sleep(seconds)
        rate = (count - start_count) / (time.perf_counter() - started)
    finally:
        _stop(proc)
        await server.stop(0)
    return rate


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 8])
    ap.add_argument("--streams", type=int, default=1,
                    help="connections per trivial bot (matches spread over them)")
    ap.add_argument("--soak", type=int, default=64, help="matches for the timeout check")
    ap.add_argument("--repeat", type=int, default=3,
                    help="referee/raw pairs per concurrency; the median ratio is reported")
    ns = ap.parse_args()
    for c in ns.concurrency:
        ratios: list[float] = []
        for i in range(ns.repeat):
            # back to back, so a slow spell of a shared machine hits both alike
            ref = await referee_rate(c, ns.seconds, streams=ns.streams)
            raw = await raw_rate(c, ns.seconds, ref["turn"])
            ratios.append(ref["rate"] / raw)
            print(f"concurrency {c} [{i + 1}/{ns.repeat}]: referee {ref['rate']:,.0f} "
                  f"decisions/s (median Turn {len(ref['turn'])} B); raw ping-pong with that "
                  f"Turn {raw:,.0f} round trips/s; ratio {ratios[-1]:.0%}; referee process "
                  f"CPU {ref['cpu_us']:.0f} µs/decision", flush=True)
        print(f"concurrency {c}: median ratio {statistics.median(ratios):.0%} "
              f"(min {min(ratios):.0%}, max {max(ratios):.0%})", flush=True)
    if ns.soak:
        soak = await referee_rate(ns.soak, ns.seconds, timeout_ms=1000)
        print(f"{ns.soak} concurrent matches at 1000 ms: {soak['decisions']:,} decisions, "
              f"{soak['timeouts']} timeouts, slowest answer {soak['slowest_ms']:.0f} ms",
              flush=True)


if __name__ == "__main__":
    asyncio.run(main())
