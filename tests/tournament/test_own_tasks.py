"""`settle`: waiting for a helper task ignores the helper's end, never our own
cancellation (how Ctrl-C reaches a run: a lost one let a run finish with status 0)."""

from __future__ import annotations

import asyncio

import pytest

from cfarena.server.own_tasks import settle


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fails() -> None:
    raise ValueError("helper failed")


def test_the_helpers_own_end_is_ignored() -> None:
    async def scenario() -> list[str]:
        seen = []
        helper = asyncio.create_task(_forever())
        helper.cancel()
        await settle(helper)
        seen.append("cancelled helper")
        await settle(asyncio.create_task(_forever()), 0.05)
        seen.append("timed out")
        await settle(asyncio.create_task(_fails()))
        seen.append("failed helper")
        with pytest.raises(ValueError, match="helper failed"):
            await settle(asyncio.create_task(_fails()), failures=False)
        return seen

    assert asyncio.run(scenario()) == ["cancelled helper", "timed out", "failed helper"]


def test_a_cancellation_of_the_waiting_task_propagates() -> None:
    async def waiter() -> str:
        await settle(asyncio.create_task(_forever()))
        return "went on as if nothing happened"

    async def scenario() -> bool:
        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(scenario()) is True


def test_cleanup_after_a_cancellation_still_ignores_helpers() -> None:
    """In a `finally` after the task was cancelled, a helper's cancellation is not
    taken for a new one of ours (cleanup goes on), but a new cancel still propagates."""
    steps: list[str] = []

    async def waiter() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            helper = asyncio.create_task(_forever())
            helper.cancel()
            await settle(helper)
            steps.append("cleaned up")
            await settle(asyncio.create_task(_forever()))
            steps.append("not reached")

    async def scenario() -> None:
        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        task.cancel()  # into the wait: the finally runs
        await asyncio.sleep(0.01)
        task.cancel()  # into the second settle: propagates
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert steps == ["cleaned up"]
