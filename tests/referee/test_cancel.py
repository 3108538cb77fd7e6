"""A match cancelled at any moment hands over a record that says it was aborted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.server.referee import MatchRecord, TimeControl, TokenRegistry

from .test_credentials import Client, referee

SHORT = Rules.preset("standard").with_options(rounds=1)


@pytest.mark.parametrize("when", ["at once", "mid-match"])
def test_a_cancelled_match_is_handed_over_aborted(tmp_path: Path, when: str) -> None:
    """Cancelled as it starts or while it plays: never handed over as "running"."""
    asyncio.run(_cancel(tmp_path, when))


async def _cancel(tmp_path: Path, when: str) -> None:
    async with referee(tmp_path, TokenRegistry()) as server:
        clients = []
        for name in ("alpha", "beta"):
            secret, seat_pass = server.passes.issue(name)
            client = Client(server.address, secret)
            await client.start()
            clients.append((client, await server.wait_for_pass(seat_pass, 5)))
        handed: list[MatchRecord] = []
        playing = asyncio.get_running_loop().create_task(server.run_match(
            "m", SHORT, 3, ["alpha", "beta"], TimeControl(5000), on_record=handed.append,
            connections=[conn for _, conn in clients]))
        await asyncio.sleep(0)
        while when == "mid-match" and not any(client.turns for client, _ in clients):
            await asyncio.sleep(0)
        playing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await playing
        assert len(handed) == 1
        assert handed[0].status == "aborted"
        assert handed[0].reason == "aborted: referee shutting down"
        for client, _ in clients:
            await client.stop()
