"""A phase change stops what could carry a deal past the host's reset, deterministically:
a real `BotPool` with real sandboxed processes (fork servers for a bundled bot, fresh
processes for a shell command) and a real referee; no match is played (processes are
taken and `begin` a deal as for a match). And the order of a local run: no match of a
phase starts before every match of the phase before it has ended.

After `new_phase` (FAIRPLAY.md, "Host state"), no bot process alive before it (warm,
or playing) is alive, nor any fork server that forked a child before it (its sandbox
keeps bits its cleaner cannot reset), nor any started while a bot process of the phase
ran (what it mapped of the host's files may hold pages a bot read on purpose, which
the drop of the page cache keeps); a fork server started before any bot's code ran
that never forked may stay. `restart` (after the host's reset) starts every fork
server of the next phase before any of its bot processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.bundled_bots import bundled_command
from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.server.sandbox import BotProcess, sandbox_problem
from cfarena.server.storage import MatchStatus, ScheduledMatch
from cfarena.server.tournament.forks import ForkServer
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import BotPool, Launch
from cfarena.server.tournament.warm_processes import WarmBot

FORKED, FRESH = "random", "fresh"
# shell syntax (a redirection): run as written, a fresh interpreter per process
FRESH_COMMAND = " ".join(bundled_command("random")[1:]) + " --capacity 1 </dev/null"
TIMEOUT = 60.0


def _alive(thing: WarmBot | ForkServer) -> bool:
    process = thing.process if isinstance(thing, WarmBot) else thing.sandbox
    assert process is not None
    if isinstance(process, BotProcess):
        return process.returncode is None
    return process.returncode is None and process.server.alive


@contextlib.asynccontextmanager
async def _started_pool(tmp: Path, commands: dict[str, str | None], **options: Any
                        ) -> AsyncIterator[BotPool]:
    """A real referee (on a Unix socket in `tmp`) and a sandboxed `BotPool` of
    `commands` (`options`: BotPool's), started; both stopped at the end."""
    server = RefereeServer(TokenRegistry(), port=None, unix_socket=tmp / "arena.sock")
    await server.start()
    pool = BotPool(server, Launch(sandbox=True, cwd=tmp, connect_timeout=TIMEOUT),
                   commands, **options)
    try:
        await pool.start()
        yield pool
    finally:
        await pool.close()
        await server.stop(grace=0.5)


def _sandboxed(run: Callable[[Path], Coroutine[Any, Any, Any]], tmp: Path
               ) -> dict[str, Any]:
    """`run(tmp)`, which needs real sandboxes (the test fails, saying why, without)."""
    if shutil.which("bwrap") is None or sandbox_problem() is not None:
        pytest.fail(f"the sandbox cannot be created here: {sandbox_problem()}", pytrace=False)
    return asyncio.run(run(tmp))


async def _run(tmp: Path) -> dict[str, list[bool]]:
    async with _started_pool(tmp, {FORKED: None, FRESH: f"{sys.executable} {FRESH_COMMAND}"},
                             warm={FORKED: 2, FRESH: 1},
                             demand={FORKED: 100, FRESH: 100}) as pool:
        # a child of each bot plays deal 1; a forked child of deal 2 ends and leaves
        # its server idle, having forked
        playing = [await pool.take(FORKED, 1), await pool.take(FRESH, 1)]
        pool.begin(FORKED, 1)
        pool.begin(FRESH, 1)
        done = await pool.take(FORKED, 2)
        assert done.connection is not None and done.server is not None
        done.connection.retire()
        await asyncio.wait_for(done.process.wait(), TIMEOUT)
        for _ in range(500):  # the server reports its child's exit after the child exits
            if done.server.idle:
                break
            await asyncio.sleep(0.01)
        await pool.release(done)
        while pool.processes.tasks:  # the spares started in the background
            await asyncio.gather(*pool.processes.tasks, return_exceptions=True)
        forked_idle = [s for s in pool.forked.idle[FORKED] if s._forks > 0]
        assert forked_idle, "an idle fork server that forked before the change"
        warm = [w for w in pool.processes.live if w not in playing]
        assert any(w.bot == FRESH for w in warm), "a warm fresh process before the change"
        live = playing + warm
        assert all(_alive(w) for w in live) and all(_alive(s) for s in forked_idle)
        await pool.new_phase()
        pool.end(FORKED, 1)
        pool.end(FRESH, 1)
        state = {"processes": [_alive(w) for w in live],
                 "forked servers": [_alive(s) for s in forked_idle]}
        await pool.restart()
        again = await pool.take(FORKED, 1)  # the next phase plays the deal again
        assert again.server not in forked_idle
        return state


def test_a_phase_change_stops_every_process_and_every_server_that_forked(
        tmp_path: Path) -> None:
    state = _sandboxed(_run, tmp_path)
    assert not any(state["processes"]), state  # warm and playing: stopped
    assert not any(state["forked servers"]), state  # a child's bits die with its sandbox


async def _run_mid_phase(tmp: Path) -> dict[str, Any]:
    # three servers, one of which forked the start's check
    async with _started_pool(tmp, {FORKED: None}, warm={FORKED: 3},
                             demand={FORKED: 100}) as pool:
        before = set(pool.forked.servers)
        playing = await pool.take(FORKED, 1)  # a bot's code runs: the phase has begun
        pool.begin(FORKED, 1)
        # a server started now (as a replacement in the background would be) faults its
        # pages while the bot's reads are cached: it never forks, yet must not stay
        mid = await pool.forked.start_server(FORKED)
        assert mid is not None
        while pool.processes.tasks:
            await asyncio.gather(*pool.processes.tasks, return_exceptions=True)
        during = set(pool.forked.servers) - before
        unforked = [s for s in before if s._forks == 0]
        await pool.new_phase()
        pool.end(FORKED, 1)
        state: dict[str, Any] = {
            "unforked from the start": len(unforked),
            "started during the phase, alive": [s.label for s in during if _alive(s)],
            "unforked from the start, alive": [_alive(s) for s in unforked],
            "forked, alive": [s.label for s in pool.forked.servers if s.alive and s._forks > 0],
            "playing process alive": _alive(playing),
        }
        await pool.restart()
        state["alive after restart, not started clean"] = [
            s.label for s in pool.forked.servers if s.alive and s not in pool.forked.clean]
        again = await pool.take(FORKED, 1)
        state["next phase forks a server started during the phase"] = again.server in during
        return state


def test_servers_started_while_a_phase_played_do_not_outlive_it(tmp_path: Path) -> None:
    state = _sandboxed(_run_mid_phase, tmp_path)
    assert state["unforked from the start"] >= 1, state
    assert state["started during the phase, alive"] == [], state
    assert all(state["unforked from the start, alive"]), state  # clean, never forked: kept
    assert state["forked, alive"] == [] and not state["playing process alive"], state
    assert state["alive after restart, not started clean"] == [], state
    assert state["next phase forks a server started during the phase"] is False, state


async def _run_neighbours_change(tmp: Path) -> dict[str, Any]:
    """A spawned bot's take waits for the process started for it when a neighbour's
    phase change (a queue worker's other tournament: `keep_playing`) stops that process,
    and the take's seat was the phase's last: `restart` must start one for it."""
    # one process, ready
    async with _started_pool(tmp, {FRESH: f"{sys.executable} {FRESH_COMMAND}"},
                             warm={FRESH: 1}, demand={FRESH: 100},
                             phase_seats={0: {FRESH: 2}}) as pool:
        first = await pool.take(FRESH, 1)  # ready; its replacement starts connecting
        pool.begin(FRESH, 1)
        second = asyncio.ensure_future(pool.take(FRESH, 2))  # the phase's last seat
        for _ in range(100):
            if pool.spawned._waiting.get(FRESH):
                break
            await asyncio.sleep(0)
        state: dict[str, Any] = {
            "waiting before the change": pool.spawned._waiting.get(FRESH, 0),
            "ready before the change": pool.spawned._ready[FRESH].qsize()}
        await pool.new_phase(keep_playing=True)
        state["first kept"] = _alive(first)
        await pool.restart()
        try:
            got = await asyncio.wait_for(second, TIMEOUT)
            state["second got a process"] = got.connection is not None and _alive(got)
        except TimeoutError:
            state["second got a process"] = False
        return state


def test_a_take_waiting_through_a_neighbours_phase_change_gets_a_process(
        tmp_path: Path) -> None:
    state = _sandboxed(_run_neighbours_change, tmp_path)
    # the case itself: the take waits for the one process started for it, not ready yet
    # (a fresh sandboxed interpreter takes far longer to connect than these few turns)
    assert state["waiting before the change"] == 1, state
    assert state["ready before the change"] == 0, state
    assert state["first kept"] is True, state
    assert state["second got a process"] is True, state


def test_no_match_of_a_phase_starts_before_the_phase_before_ended() -> None:
    events: list[tuple[str, str]] = []

    async def play(match: ScheduledMatch) -> None:
        events.append(("start", match.key))
        await asyncio.sleep(0.01 * (1 + int(match.key[1])))  # uneven: they end out of order
        events.append(("end", match.key))

    async def enter_phase(phase: int) -> None:
        events.append(("phase", str(phase)))

    # 3 deals x 2 rotations; rotation r is phase r; 2 at once: g2-r0 starts last
    matches = [ScheduledMatch(f"m{g}{r}", f"g{g}-r{r}", g, {}, 2, "", (1, 2),
                              MatchStatus.SCHEDULED) for g in range(3) for r in range(2)]
    phases = {m.key: int(m.key[-1]) for m in matches}
    asyncio.run(play_all(matches, play, 2, phases, enter_phase))
    second = events.index(("phase", "1"))
    assert {k for e, k in events[:second] if e == "end"} == {"g0-r0", "g1-r0", "g2-r0"}
    assert all(phases[k] == 1 for e, k in events[second:] if e in ("start", "end"))
