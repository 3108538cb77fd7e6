"""The time bank at a real referee: a real bot process answers slowly over gRPC.

Time control 100 ms per move, a 1000 ms bank, 50 ms increment. The slow seat
answers every Turn after 300 ms: each answer draws about 200 ms from its bank
and earns 50 ms back, until what is left no longer covers 300 ms and it times
out (with one strike, it forfeits). The bank each Turn carries, as the bot
read it off the wire, must be exactly what the record's answer times give.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from cfarena.engine import Rules
from cfarena.match.log_format import record_to_log
from cfarena.server.referee import FaultKind, MatchRecord, TimeControl
from cfarena.server.replay.verify import verify_log

from .harness import table

RULES = Rules.preset("standard").with_options(rounds=2)
TC = TimeControl(move_timeout_ms=100, bank_ms=1000, increment_ms=50, strikes=1)
DELAY_MS = 300


def _play(tmp: Path) -> tuple[MatchRecord, str]:
    async def go() -> tuple[MatchRecord, str]:
        names = ["slow", "good"]
        async with table(tmp, names) as t:
            slow = t.raw("slow", "slow", "--delay-ms", str(DELAY_MS))
            t.raw("good", "good")
            await t.server.wait_for_bots(names, timeout=30)
            record = await t.server.run_match("bank", RULES, 8, names, TC)
            for _ in range(100):  # its last TURN line may trail the MatchEnd
                if "END bank" in t.output(slow):
                    break
                await asyncio.sleep(0.05)
            return record, t.output(slow)

    return asyncio.run(go())


def test_bank_is_drawn_down_increment_added_and_overrun_times_out(tmp_path: Path) -> None:
    record, out = _play(tmp_path)
    assert record.status == "finished", record.reason
    seen = {int(t): (int(bank), int(deadline))
            for t, bank, deadline in re.findall(r"^TURN (\d+) (\d+) (\d+)$", out, re.M)}
    mine = [a for a in record.actions if a.seat == 0 and a.decided]
    answered = [a for a in mine if not a.fallback]
    assert len(answered) >= 3, "the bank should carry several 300 ms answers"

    # the bank each Turn carried is what the answer times before it leave
    bank = float(TC.bank_ms)
    for action in answered:
        assert action.turn_id is not None and action.elapsed_ms is not None
        assert seen[action.turn_id] == (int(bank), TC.move_timeout_ms)
        over = action.elapsed_ms - TC.move_timeout_ms
        assert over > 0  # every answer overran the move timeout: it was paid from the bank
        bank = max(0.0, bank - over) + TC.increment_ms
    # drawn down and topped up: the second Turn's bank is 1000 - (ms - 100) + 50
    first = answered[0]
    assert first.elapsed_ms is not None
    assert seen[2][0] == int(TC.bank_ms - (first.elapsed_ms - TC.move_timeout_ms)
                             + TC.increment_ms)
    assert seen[2][0] < TC.bank_ms

    # the overrun: the next decision found too little bank left for 300 ms
    assert [(f.kind, f.forfeit) for f in record.faults] == [(FaultKind.TIMEOUT, True)]
    fault = record.faults[0]
    assert fault.turn_id == answered[-1].turn_id + 1 == mine[-1].turn_id
    assert seen[fault.turn_id][0] == int(bank)
    allowed = TC.move_timeout_ms + bank
    assert allowed > TC.move_timeout_ms  # the bank still extended the deadline
    assert fault.detail == f"no answer within {allowed:.0f} ms"
    assert mine[-1].fallback and mine[-1].elapsed_ms is not None
    assert mine[-1].elapsed_ms >= allowed - 1
    assert record.forfeited == [0] and record.ranks[0] == 2
    assert verify_log(record_to_log(record)) == []
