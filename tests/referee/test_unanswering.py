"""A connection that let a Turn time out is offered for no new match (nor is its one-match
stream ended) until it answers
that Turn (late) or UNANSWERED_GRACE_S pass (referee/connection.py; the real-process
test is tests/cli/test_cli_serve_frozen_bot.py)."""

from __future__ import annotations

import asyncio

import pytest

from cfarena.server.referee import connection
from cfarena.server.referee.connection import BotConnection
from cfarena.v1 import arena_pb2 as pb


class _NoWrites:
    async def write(self, message: object) -> None:
        raise AssertionError("nothing is written here")


def test_seated_again_once_it_answers_or_after_the_grace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("cfarena.server.referee.connection.time.monotonic", lambda: now[0])
    conn = BotConnection("slow", 2, _NoWrites())
    conn.matches["m1"] = 0
    conn.timed_out("m1", 7)
    assert conn.free == 0 and conn.unanswering
    # an answer to an earlier Turn is no sign it is done with this one
    conn.on_action(pb.Action(match_id="m1", turn_id=6, move_index=0))
    assert conn.free == 0
    # its late answer to the Turn that timed out (ignored, with a notice): seated again
    assert conn.on_action(pb.Action(match_id="m1", turn_id=7, move_index=0)) is not None
    assert conn.free == 1 and not conn.unanswering
    # one that never answers: after the grace
    del conn.matches["m1"]
    conn.timed_out("m2", 1)
    now[0] += connection.UNANSWERED_GRACE_S - 1
    assert conn.free == 0
    now[0] += 1
    assert conn.free == 2 and conn.overdue == {}



def test_a_late_answer_is_ignored_with_a_notice_that_says_it_was_late() -> None:
    conn = BotConnection("slow", 1, _NoWrites())
    conn.timed_out("m1", 5)  # its match is over: no seat in it any more
    assert conn.on_action(pb.Action(match_id="m1", turn_id=5, move_index=0)) == (
        "ignored: your answer to turn 5 of match 'm1' came after its deadline (it had "
        "timed out)")
    assert not conn.unanswering
    # any other answer for a match it has no seat in is told so
    assert "no seat in match 'm1'" in str(conn.on_action(pb.Action(match_id="m1", turn_id=5)))


def test_a_retired_stream_ends_once_the_late_answer_is_in_or_after_a_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        conn = BotConnection("slow", 1, _NoWrites())
        conn.timed_out("m1", 5)
        conn.retire()
        ending = asyncio.ensure_future(conn.wait_retired())
        await asyncio.sleep(0.2)
        assert not ending.done()  # its late answer is still to come
        conn.on_action(pb.Action(match_id="m1", turn_id=5, move_index=0))
        await asyncio.wait_for(ending, 1)
        # a bot that never answers: its stream ends after LATE_ANSWER_WAIT_S
        monkeypatch.setattr(connection, "LATE_ANSWER_WAIT_S", 0.2)
        silent = BotConnection("silent", 1, _NoWrites())
        silent.timed_out("m2", 1)
        silent.retire()
        await asyncio.wait_for(silent.wait_retired(), 1)
        assert silent.unanswering

    asyncio.run(go())
