"""The fork-server taint rule, deterministically: a real `BotPool` of a bundled bot, with
real sandboxed fork servers and a real referee, driven through a scripted sequence of
deals (no match is played: each process connects, is retired and exits by itself, as
after a match, and its fork server goes back to the pool).

The rule (FAIRPLAY.md, "Fork servers"): a sandbox is never used for a deal that one of
its children played, or that its bot played while one of its children was alive. The
script makes a server hear of a deal each way without playing it:

1. a child of server A is taken for deal 1 and begins it; a child of server B is then
   taken for deal 2 (B's child is forked while deal 1 is being played: B heard of 1),
   and begins it (A's child is alive: A heard of 2);
2. both exit and their servers are idle again; then deal 2 is taken as many times as
   there are idle servers, and then deal 1 (the children of deal 2 still alive), so
   that any server the pool wrongly thinks clean of a deal is handed out for it (the
   pool takes the first clean idle server, in order, before it starts another).

The test keeps its own account of what each server heard and checks every take against it.
"""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.server.sandbox import sandbox_problem
from cfarena.server.tournament.forks import ForkServer
from cfarena.server.tournament.pool import BotPool, Launch
from cfarena.server.tournament.warm_processes import WarmBot

BOT = "random"
DEAL_1, DEAL_2 = 1001, 2002
TIMEOUT = 60.0


class Script:
    """The pool and the test's own account of what each fork server heard of."""

    def __init__(self, pool: BotPool) -> None:
        self.pool = pool
        self.heard: dict[int, set[ForkServer]] = defaultdict(set)
        self.playing: set[int] = set()
        self.alive: list[WarmBot] = []
        self.takes: dict[int, int] = defaultdict(int)

    async def take(self, deal: int) -> WarmBot:
        warm = await self.pool.take(BOT, deal)
        server = warm.server
        assert server is not None, "a bundled bot is forked"
        assert server not in self.heard[deal], f"a server that heard of deal {deal} forked it"
        self.takes[deal] += 1
        self.heard[deal].add(server)  # its child plays it
        for playing in self.playing:  # its child lives while these are played
            self.heard[playing].add(server)
        self.alive.append(warm)
        return warm

    def begin(self, deal: int) -> None:
        self.pool.begin(BOT, deal)
        self.playing.add(deal)
        for warm in self.alive:
            assert warm.server is not None
            self.heard[deal].add(warm.server)

    def end(self, deal: int) -> None:
        self.pool.end(BOT, deal)
        self.playing.discard(deal)

    async def exit_all(self) -> None:
        """Every live child ends its match and exits by itself; its server is kept."""
        for warm in self.alive:
            assert warm.connection is not None
            warm.connection.retire()
            await asyncio.wait_for(warm.process.wait(), TIMEOUT)
            assert warm.process.exited_by_itself
            await self.pool.release(warm)
        self.alive.clear()

    def idle(self) -> list[ForkServer]:
        return list(self.pool.forked.idle[BOT])  # the pool's idle servers, in the order it uses

    async def settle(self) -> None:
        """Let the spare servers the pool started in the background finish starting."""
        while self.pool.processes.tasks:
            await asyncio.gather(*self.pool.processes.tasks, return_exceptions=True)


async def _run(tmp: Path) -> Script:
    server = RefereeServer(TokenRegistry(), port=None, unix_socket=tmp / "arena.sock")
    await server.start()
    pool = BotPool(server, Launch(sandbox=True, cwd=tmp, connect_timeout=TIMEOUT),
                   {BOT: None}, warm={BOT: 2}, demand={BOT: 100})
    script = Script(pool)
    try:
        await pool.start()
        # 1. A hears of deal 2 (its child alive when deal 2 begins), B of deal 1 (forked
        #    while deal 1 is played), neither playing it
        a = (await script.take(DEAL_1)).server
        script.begin(DEAL_1)
        b = (await script.take(DEAL_2)).server
        script.begin(DEAL_2)
        assert a is not b
        await script.exit_all()
        script.end(DEAL_1)
        script.end(DEAL_2)
        await script.settle()
        # 2. every idle server for deal 2, then (those still alive) every idle server for
        #    deal 1: A and B are among them
        for deal, heard_only in ((DEAL_2, a), (DEAL_1, b)):
            await script.settle()
            idle = script.idle()
            assert heard_only in idle and heard_only.idle, "the server is there to be taken"
            for _ in idle:
                await script.take(deal)
        await script.exit_all()
        return script
    finally:
        await pool.close()
        await server.stop(grace=0.5)


def test_a_fork_server_is_never_used_for_a_deal_it_heard_of(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None or sandbox_problem() is not None:
        pytest.fail(f"the sandbox cannot be created here: {sandbox_problem()}", pytrace=False)
    script = asyncio.run(_run(tmp_path))
    # each deal was taken in step 1 and then once per idle server (A and B among them),
    # never from a server that had heard of it (checked at each take)
    assert script.takes[DEAL_1] >= 3 and script.takes[DEAL_2] >= 3, script.takes
