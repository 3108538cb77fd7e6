"""The referee's own stalls are not the bots' time (referee/lag.py): a real referee whose
loop is blocked (as a synchronous call or a frozen process would block it) right after
it sent a Turn, with real bot processes. The answer that came during the stall is in
time; a connection that ended during it voids the match instead of faulting the seat."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
from pathlib import Path

from cfarena.engine import Rules
from cfarena.match.abort_reason import AbortReason
from cfarena.match.record import MatchRecord, MatchStatus, TimeControl
from cfarena.server.referee.lag import LoopLag
from cfarena.v1 import arena_pb2 as pb

from .harness import table

SHORT = Rules.preset("standard").with_options(rounds=1)
STALL_S = 1.5


async def _stalled_match(tmp_path: Path, mode: str, *extra: str, timeout_ms: int = 500,
                         kill: bool = False, blocks: tuple[float, ...] = (STALL_S,),
                         ) -> MatchRecord:
    """A match of rawbot `mode` (seat 0) against a good rawbot, the referee's loop blocked
    for each of `blocks` seconds (0.05 s apart) just after it sent seat 0 its third Turn
    (`kill`: and seat 0's process killed at the start of the last block)."""
    async with table(tmp_path, ["a", "b"]) as t:
        loop = asyncio.get_running_loop()
        turns = 0

        def on_send(name: str, match_id: str, seat: int, data: bytes) -> None:
            nonlocal turns
            if name == "a" and pb.RefereeMessage.FromString(data).WhichOneof("kind") == "turn":
                turns += 1
                if turns == 3:  # written within a moment; then the loop blocks
                    loop.call_later(0.05, stall)

        def stall(left: tuple[float, ...] = blocks) -> None:
            if kill and len(left) == 1:
                assert bot.pid is not None
                os.kill(bot.pid, signal.SIGKILL)
            time.sleep(left[0])
            if left[1:]:
                loop.call_later(0.05, stall, left[1:])

        t.server.on_send = on_send
        bot = t.raw("a", mode, *extra)
        t.raw("b", "good")
        await t.server.wait_for_bots(["a", "b"], timeout=30)
        record = await t.server.run_match("m1", SHORT, 5, ["a", "b"],
                                          TimeControl(move_timeout_ms=timeout_ms))
        assert turns >= 3
        assert t.server.lag.longest_s >= max(blocks) - 0.1
        return record


def test_an_answer_that_came_during_a_stall_is_in_time(tmp_path: Path) -> None:
    record = asyncio.run(_stalled_match(tmp_path, "slow", "--delay-ms", "200"))
    assert record.status is MatchStatus.FINISHED
    assert record.faults == []
    # the seat is charged its time before the stall, not the stall (when in the stall its
    # answer came cannot be known)
    third = [a for a in record.actions if a.seat == 0 and a.decided][2]
    assert third.elapsed_ms is not None and third.elapsed_ms < 500


def test_a_connection_ended_during_a_stall_voids_the_match(tmp_path: Path) -> None:
    record = asyncio.run(_stalled_match(tmp_path, "slow", "--delay-ms", "200", kill=True))
    assert record.status is MatchStatus.ABORTED
    assert record.reason is not None and record.reason.startswith(AbortReason.REFEREE_STALLED)
    assert record.faults == []


def test_short_stalls_that_add_up_do_not_void_a_disconnect(tmp_path: Path) -> None:
    # what a bot's own busy processes do to the referee on a busy host: the loop runs
    # late by a fraction of a second every few ticks, more than a second in all (2 s
    # here); a connection that ends then ends by the bot's doing, as without stalls (a
    # second per decision: the good bot's answers, on a loaded machine, in time)
    record = asyncio.run(_stalled_match(tmp_path, "slow", "--delay-ms", "200", kill=True,
                                        blocks=(0.4,) * 5, timeout_ms=1000))
    assert record.status is MatchStatus.FINISHED
    assert [(f.seat, f.kind.value) for f in record.faults] == [(0, "disconnect")]


def test_lag_counts_stalls_once_and_a_stall_in_progress() -> None:
    async def go() -> None:
        lag = LoopLag(period_s=0.01, margin_s=0.05, recovery_s=0.1, ends_connections_s=0.5)
        lag.start()
        await asyncio.sleep(0.05)
        before = time.perf_counter()
        time.sleep(0.3)  # the loop blocked: nobody ticked (a short stall)
        # from when the next tick was due (up to a period after `before`) to now
        assert 0.3 - 0.015 <= lag.stalled(before) <= 0.3 + 0.01 + 0.05  # in progress
        await asyncio.sleep(0.02)
        time.sleep(0.2)  # a second short stall: its lateness only, no recovery
        await asyncio.sleep(0.02)
        assert len(lag.stalls) == 2 and not lag.freezes
        assert 0.5 - 0.03 <= lag.stalled(before, time.perf_counter()) <= 0.5 + 2 * 0.02
        # short stalls (which a bot's busy processes can cause) excuse at most the cap
        assert lag.stalled(before, time.perf_counter(), short_cap=0.1) == 0.1
        assert lag.stalled(time.perf_counter() + 1.0) == 0.0
        frozen = time.perf_counter()
        time.sleep(0.6)  # a freeze: counted whole, with its recovery, whatever the cap
        await asyncio.sleep(0.02)
        assert len(lag.freezes) == 1
        assert 0.6 + 0.1 - 0.015 <= lag.stalled(frozen, math.inf, short_cap=0.0) <= 0.6 + 0.1 + 0.03
        lag.stop()

    asyncio.run(go())
