"""The order matches are played in on one machine: phase by phase (`schedule.phases`),
`concurrency` at once, and never two matches of one deal at once for one bot."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

from cfarena.server.storage import ScheduledMatch


async def play_all(pending: Sequence[ScheduledMatch],
                   play: Callable[[ScheduledMatch], Awaitable[None]], concurrency: int,
                   phase_of: Mapping[str, int] | None = None,
                   enter_phase: Callable[[int], Awaitable[None]] | None = None) -> None:
    """Play every match, `concurrency` at once, phase after phase (by `phase_of`, the
    phase of each key; all in one phase without it): every match of a phase has ended
    before `enter_phase(next)` is awaited and the next phase's first match starts.
    Within a phase, two matches with the same deal never run at the same time for the
    same bot (two live processes of one bot could signal each other what they hold)."""
    phase_of = phase_of or {}
    by_phase: dict[int, list[ScheduledMatch]] = {}
    for match in pending:
        by_phase.setdefault(phase_of.get(match.key, 0), []).append(match)
    for phase in sorted(by_phase):
        if enter_phase is not None:
            await enter_phase(phase)
        await _play_phase(by_phase[phase], play, concurrency)


async def _play_phase(pending: Sequence[ScheduledMatch],
                      play: Callable[[ScheduledMatch], Awaitable[None]],
                      concurrency: int) -> None:
    queue = rotation_major(pending)
    busy: set[tuple[int, int]] = set()
    running: dict[asyncio.Task[None], ScheduledMatch] = {}
    try:
        while queue or running:
            while queue and len(running) < concurrency:
                match = next((m for m in queue
                              if not any((m.seed, b) in busy for b in m.seat_bot_ids)), None)
                if match is None:
                    break
                queue.remove(match)
                busy.update((match.seed, b) for b in match.seat_bot_ids)
                running[asyncio.ensure_future(play(match))] = match
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                match = running.pop(task)
                busy.difference_update((match.seed, b) for b in match.seat_bot_ids)
                task.result()  # a failure stops the run (the others are cancelled below)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def rotation_major(pending: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
    """Play rotation r of every game before rotation r+1 of any: consecutive matches of
    one bot then hold different deals, so the processes started ahead of need during
    one match can play the next (see BotPool.take: a process alive while its bot played
    a deal never plays that deal)."""
    def order(m: ScheduledMatch) -> tuple[int, int]:
        rotation = m.key.rsplit("-r", 1)[-1]
        return (int(rotation) if rotation.isdigit() else 0, pending.index(m))

    return sorted(pending, key=order)
