"""BotClient against a scripted in-process referee (real gRPC on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import pytest

from cfarena.engine.events import Event
from cfarena.engine.moves import PASS, Move
from cfarena.engine.tiles import Tile
from cfarena.sdk import Bot, BotClient, BotConnectionError, MatchInfo, MatchResult, Turn
from cfarena.sdk.bot import resolve_choice
from cfarena.v1 import arena_pb2 as pb

from .sdk_fake_referee import FakeReferee, Session
from .sdk_samples import match_end, match_start, start_events, turn, welcome


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))


class Recorder(Bot):
    """Records every call; `pick` decides."""

    def __init__(self, pick: Callable[[Turn], Any] = lambda t: t.legal_moves[-1]) -> None:
        self.pick = pick
        self.calls: list[tuple[str, Any]] = []
        self.turns: list[Turn] = []

    def on_match_start(self, match: MatchInfo) -> None:
        self.calls.append(("start", match.match_id))

    def on_events(self, match_id: str, events: Sequence[Event]) -> None:
        self.calls.append(("events", (match_id, len(events))))

    def choose(self, turn: Turn) -> Any:
        self.calls.append(("choose", (turn.match_id, turn.turn_id)))
        self.turns.append(turn)
        return self.pick(turn)

    def on_match_end(self, result: MatchResult) -> None:
        self.calls.append(("end", (result.match_id, result.rank)))


def client(bot: Bot, referee: FakeReferee, **kw: Any) -> BotClient:
    kw.setdefault("backoff_initial", 0.05)
    kw.setdefault("max_retries", 3)
    return BotClient(bot, referee.address, "secret", **kw)


def test_handshake_match_and_clean_close() -> None:
    bot = Recorder()
    seen: dict[str, Any] = {}

    async def script(s: Session) -> None:
        hello = await s.hello()
        seen["hello"] = hello
        await s.send(welcome(), match_start("m1", seat=0))
        await s.send(turn("m1", 5, start_events()))
        seen["action"] = await s.action()
        await s.send(match_end("m1", first_index=2))

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        c = client(bot, ref, client_name="tester 1.0")
        await c.run()  # returns: the stream ended with OK
        ref.check()
        assert c.welcome is not None and c.welcome.bot_name == "tester"
        await ref.stop()

    run(main())
    hello = seen["hello"]
    assert (hello.token, hello.protocol, hello.capacity, hello.client) == (
        "secret", "cfarena.v1", 1, "tester 1.0"
    )
    action = seen["action"]
    assert (action.match_id, action.turn_id, action.move_index) == ("m1", 5, 2)
    assert bot.calls == [
        ("start", "m1"),
        ("events", ("m1", 2)),
        ("choose", ("m1", 5)),
        ("events", ("m1", 1)),
        ("end", ("m1", 1)),
    ]
    t = bot.turns[0]
    assert t.legal_moves[-1] is PASS or t.legal_moves[-1] == PASS
    assert t.history == start_events() and t.seat == 0 and t.hand[0] == Tile(1, 2)
    assert len(t.plays) == 2
    assert 0 < t.time_left() <= 2.0
    assert t.time_left(include_bank=True) == pytest.approx(t.time_left(), abs=0.01)


def test_two_matches_run_concurrently_with_capacity_2() -> None:
    b_chosen = threading.Event()

    def pick(t: Turn) -> Move:
        if t.match_id == "A" and t.turn_id == 1:
            # blocks until match B's choose ran: only possible if they overlap
            assert b_chosen.wait(10), "match B was never asked while A was thinking"
        if t.match_id == "B":
            b_chosen.set()
        return t.legal_moves[1]

    bot = Recorder(pick)
    actions: list[pb.Action] = []

    async def script(s: Session) -> None:
        hello = await s.hello()
        assert hello.capacity == 2
        await s.send(welcome(), match_start("A"), match_start("B", seat=1))
        await s.send(turn("A", 1, start_events()), turn("B", 1, start_events(), seat=1))
        actions.append(await s.action())
        actions.append(await s.action())
        await s.send(turn("A", 2, (), event_count=2))
        actions.append(await s.action())
        await s.send(match_end("A", 2), match_end("B", 2))

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        await client(bot, ref, capacity=2).run()
        ref.check()
        await ref.stop()

    run(main())
    # A's choose could only return after B's ran (they overlapped); which of the
    # two answers reaches the referee first is up to the threads
    answered = [(a.match_id, a.turn_id, a.move_index) for a in actions]
    assert sorted(answered[:2]) == [("A", 1, 1), ("B", 1, 1)]
    assert answered[2] == ("A", 2, 1)
    second_a = next(t for t in bot.turns if (t.match_id, t.turn_id) == ("A", 2))
    assert second_a.history == start_events() and second_a.events == ()
    assert {c for c in bot.calls if c[0] == "end"} == {("end", ("A", 1)), ("end", ("B", 2))}


@pytest.mark.parametrize(
    ("pick", "expected"),
    [
        (lambda t: 1, 1),  # an index is fine
        (lambda t: t.legal_moves[1], 1),
        (lambda t: Move.play(Tile(9, 9), 0), 1),  # an equal Move, not the same object
        (lambda t: Move.play(Tile(0, 0), 0), 0),  # not offered -> first move
        (lambda t: 7, 0),  # index out of range
        (lambda t: True, 0),
        (lambda t: 1 / 0, 0),  # choose raises
    ],
)
def test_bad_choices_fall_back_to_the_first_offered_move(
    pick: Callable[[Turn], Any], expected: int
) -> None:
    got: list[int] = []

    async def script(s: Session) -> None:
        await s.hello()
        await s.send(welcome(), match_start("m"), turn("m", 1, start_events()))
        got.append((await s.action()).move_index)

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        await client(Recorder(pick), ref).run()
        ref.check()
        await ref.stop()

    run(main())
    assert got == [expected]


def test_another_seats_observation_is_refused_loudly(caplog: pytest.LogCaptureFixture) -> None:
    # a referee that sends seat 1's view to the bot in seat 0 (a leak): the bot is not
    # asked (it must not see that hand), the error names both seats, the match goes on
    bot = Recorder()
    got: list[pb.Action] = []

    async def script(s: Session) -> None:
        await s.hello()
        await s.send(welcome(), match_start("m", seat=0))
        await s.send(turn("m", 1, start_events(), seat=1))
        got.append(await s.action())
        await s.send(turn("m", 2, start_events(), seat=0))
        got.append(await s.action())

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        await client(bot, ref).run()
        ref.check()
        await ref.stop()

    with caplog.at_level("ERROR", logger="cfarena.sdk"):
        run(main())
    assert [(a.turn_id, a.move_index) for a in got] == [(1, 0), (2, 2)]
    assert [c for c in bot.calls if c[0] == "choose"] == [("choose", ("m", 2))]
    assert all(t.seat == 0 for t in bot.turns)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, [r.getMessage() for r in caplog.records]
    text = errors[0].getMessage()
    assert "Turn 1 carries the observation of seat 1" in text
    assert "this bot sits in seat 0" in text and "not asked" in text


def test_reconnects_after_the_referee_restarts_on_the_same_port() -> None:
    bot = Recorder()
    actions: list[pb.Action] = []
    async def main() -> None:
        connected = asyncio.Event()

        async def first(s: Session) -> None:
            await s.hello()
            await s.send(welcome())
            connected.set()
            await asyncio.sleep(30)  # until the server is stopped under it

        async def second(s: Session) -> None:
            await s.hello()
            await s.send(welcome(), match_start("m"), turn("m", 1, start_events()))
            actions.append(await s.action())

        ref1 = FakeReferee(first)
        port = await ref1.start()
        c = client(bot, ref1, max_retries=20)
        task = asyncio.create_task(c.run())
        await asyncio.wait_for(connected.wait(), 10)
        await ref1.stop()
        await asyncio.sleep(0.3)  # the client retries against a closed port meanwhile
        ref2 = FakeReferee(second)
        await ref2.start(port)
        await asyncio.wait_for(task, 20)
        ref2.check()
        assert c.connections == 2
        await ref2.stop()

    run(main())
    assert [(a.match_id, a.turn_id) for a in actions] == [("m", 1)]


def test_unauthenticated_raises_without_retrying() -> None:
    async def script(s: Session) -> None:
        await s.hello()
        await s.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown token")

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        started = time.monotonic()
        with pytest.raises(BotConnectionError, match="UNAUTHENTICATED: unknown token") as info:
            await client(Recorder(), ref, max_retries=5).run()
        assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert ref.sessions == 1
        assert time.monotonic() - started < 2
        await ref.stop()

    run(main())


def test_gives_up_after_max_retries_on_a_closed_port() -> None:
    async def script(s: Session) -> None:  # never reached
        raise AssertionError

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        await ref.stop()  # the port is now closed
        c = client(Recorder(), ref, max_retries=2, backoff_initial=0.01)
        with pytest.raises(BotConnectionError, match=r"gave up after 3 failed attempts"):
            await c.run()
        c2 = client(Recorder(), ref, reconnect=False)
        with pytest.raises(BotConnectionError, match=r"UNAVAILABLE.*gave up after 1 failed"):
            await c2.run()

    run(main())


def test_non_welcome_first_message_is_fatal() -> None:
    async def script(s: Session) -> None:
        await s.hello()
        await s.send(match_start("m"))
        await asyncio.sleep(5)

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        with pytest.raises(BotConnectionError, match="not a Welcome"):
            await client(Recorder(), ref).run()
        await ref.stop()

    run(main())


def _shutdown_script(sessions: list[int]) -> Callable[[Session], Awaitable[None]]:
    """A referee that shuts down under the first connection (as `RefereeServer.stop`
    ends it) and closes the second one plainly."""

    async def script(s: Session) -> None:
        await s.hello()
        await s.send(welcome())
        sessions.append(1)
        if len(sessions) == 1:
            s.context.set_trailing_metadata((("cfarena-close", "shutdown"),))
            s.context.set_details("referee shutting down")

    return script


def test_a_referee_shutting_down_ends_the_run() -> None:
    sessions: list[int] = []

    async def main() -> None:
        ref = FakeReferee(_shutdown_script(sessions))
        await ref.start()
        await client(Recorder(), ref, max_retries=3).run()  # returns: no retry
        await ref.stop()

    run(main())
    assert sessions == [1]


def test_with_unlimited_retries_a_referee_shutting_down_is_waited_for() -> None:
    sessions: list[int] = []

    async def main() -> None:
        ref = FakeReferee(_shutdown_script(sessions))
        await ref.start()
        c = client(Recorder(), ref, max_retries=None)
        await c.run()  # reconnects after the shutdown; the second close ends it
        assert c.connections == 2
        await ref.stop()

    run(main())
    assert sessions == [1, 1]


def test_backoff_doubles_to_the_cap_with_jitter() -> None:
    c = BotClient(Recorder(), "127.0.0.1:1", "t")
    for failures, ceiling in ((1, 0.2), (2, 0.4), (3, 0.8), (6, 5.0), (30, 5.0)):
        delays = [c.backoff_delay(failures) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1


def test_resolve_choice() -> None:
    moves = (Move.play(Tile(1, 2), 0), PASS)
    assert resolve_choice(PASS, moves) == 1
    assert resolve_choice(0, moves) == 0
    assert resolve_choice(-1, moves) is None
    assert resolve_choice("pass", moves) is None
    assert resolve_choice(Move.play(Tile(1, 2), 3), moves) is None
