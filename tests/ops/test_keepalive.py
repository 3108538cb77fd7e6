"""A bot whose process freezes (SIGSTOP: its TCP connection stays open, nothing
answers) is noticed by the referee's keepalive within seconds, with the shipped
settings: its seat is faulted as a disconnect long before its move timeout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from cfarena.engine import Rules
from cfarena.sdk.client import KEEPALIVE_OPTIONS
from cfarena.server.ops import ArenaMetrics
from cfarena.server.referee import FaultKind, TimeControl
from cfarena.server.referee.transport import DEFAULT_KEEPALIVE

from ..referee.harness import table

SHORT = Rules.preset("standard").with_options(rounds=1)
# the keepalive's worst case (a ping just acknowledged when the bot froze), plus slack
NOTICED_WITHIN_S = (DEFAULT_KEEPALIVE.time_ms + DEFAULT_KEEPALIVE.timeout_ms) / 1000 + 3


def test_sdk_pings_no_faster_than_the_referee_accepts() -> None:
    options = dict(KEEPALIVE_OPTIONS)
    assert options["grpc.keepalive_time_ms"] >= 2 * DEFAULT_KEEPALIVE.min_client_ping_ms
    assert options["grpc.keepalive_permit_without_calls"] == 1


def test_a_frozen_bot_is_a_disconnect_within_seconds(tmp_path: Path) -> None:
    async def main() -> None:
        metrics = ArenaMetrics()
        async with table(tmp_path, ["frozen", "good"], observer=metrics) as t:
            frozen = t.sdk("frozen", "cfarena.bots.random_bot", "--retries", "0")
            good = t.sdk("good", "cfarena.bots.greedy", "--retries", "0")
            await t.server.wait_for_bots(["frozen", "good"], timeout=30)
            connected_at = time.monotonic()
            assert frozen.pid is not None and good.pid is not None
            await asyncio.sleep(1.0)  # a few keepalive exchanges would fail here if the
            # SDK pinged too often (GOAWAY too_many_pings ends the stream)
            assert metrics.connections == {"frozen": 1, "good": 1}
            os.killpg(frozen.pid, signal.SIGSTOP)
            frozen_at = time.monotonic()
            try:
                record = await t.server.run_match(
                    "m1", SHORT, 7, ["frozen", "good"], TimeControl(move_timeout_ms=60_000))
                noticed = time.monotonic() - frozen_at
                assert t.server.connection_count("frozen") == 0
            finally:
                os.killpg(frozen.pid, signal.SIGCONT)
            print(f"frozen bot noticed after {noticed:.1f} s", file=sys.stderr)
            assert noticed < NOTICED_WITHIN_S, noticed
            assert record.status == "finished"
            assert [(f.seat, f.kind) for f in record.faults] == [(0, FaultKind.DISCONNECT)]
            assert record.forfeited == [0]
            assert metrics.faults["disconnect"] == 1
            assert "frozen" not in metrics.connections
            # the other bot kept its connection all along, through its own pings (every
            # 10 s: no GOAWAY "too_many_pings") and the referee's
            client_ping_s = dict(KEEPALIVE_OPTIONS)["grpc.keepalive_time_ms"] / 1000
            await asyncio.sleep(max(0.0, connected_at + client_ping_s * 1.5 - time.monotonic()))
            assert t.server.connection_count("good") == 1 and good.poll() is None

    asyncio.run(main())
