"""A bot process that fails to start while the referee is frozen is not counted against
its bot (a real `BotPool` and referee, real processes): it may have failed by the
referee's doing (it could not connect to a frozen referee, or the freeze ended its
connection: gRPC's pings go unanswered), so only its bot's own failures write it off."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

import pytest

from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.server.tournament.pool import BotPool, Launch
from cfarena.server.tournament.start_failures import START_ATTEMPTS, BotStartError

# exits 0.3 s after it starts, never connecting: a failure of its own, each time
FAILING = f"{sys.executable} -c \"import sys, time; time.sleep(0.3); sys.exit('no weights')\""
FREEZE_S = 1.3  # an unbroken stall of the referee's loop of over a second: a freeze


def test_a_start_failure_during_a_referee_freeze_is_not_the_bots(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> int:
        server = RefereeServer(TokenRegistry(), port=None, unix_socket=tmp_path / "arena.sock")
        await server.start()
        pool = BotPool(server, Launch(sandbox=False, cwd=tmp_path, connect_timeout=10),
                       {"failing": FAILING}, warm={"failing": 1}, demand={"failing": 10})
        try:
            # the referee freezes while the first process lives (and fails)
            asyncio.get_running_loop().call_later(0.1, time.sleep, FREEZE_S)
            with pytest.raises(BotStartError, match="no weights"):
                await pool.start()
            return pool.processes.started
        finally:
            await pool.close()
            await server.stop(grace=0)

    with caplog.at_level(logging.WARNING, logger="cfarena.tournament"):
        started = asyncio.run(go())
    # the failure during the freeze was not counted: START_ATTEMPTS more were needed
    assert started == START_ATTEMPTS + 1
    excused = [r.getMessage() for r in caplog.records if "froze meanwhile" in r.getMessage()]
    assert len(excused) == 1 and "failing#1" in excused[0], excused
