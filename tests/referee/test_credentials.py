"""Credentials seat only their own bot: one-time passes and registered tokens.

A real referee (grpc.aio, TCP and a Unix socket) and real gRPC clients in this
process speaking the raw protocol. A seat pass (what `run-tournament` gives each
process it starts) admits exactly one connection; a registered token (what
`serve` bots hold) seats connections only in its own bot's seats.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from cfarena.engine import Rules
from cfarena.server.referee import RefereeServer, SeatingTimeout, TimeControl, TokenRegistry
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub

SHORT = Rules.preset("standard").with_options(rounds=1)


@dataclass
class Client:
    """A raw protocol client: Hello, then move 0 to every Turn; records what it got."""

    address: str
    token: str
    capacity: int = 1
    welcome: pb.Welcome | None = None
    starts: list[pb.MatchStart] = field(default_factory=list)
    turns: int = 0
    status: grpc.StatusCode | None = None
    details: str = ""
    _task: asyncio.Task[None] | None = None
    _welcomed: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())
        await asyncio.wait([self._task, asyncio.ensure_future(self._welcomed.wait())],
                           return_when=asyncio.FIRST_COMPLETED, timeout=10)

    async def _run(self) -> None:
        outbox: asyncio.Queue[pb.BotMessage | None] = asyncio.Queue()
        outbox.put_nowait(pb.BotMessage(hello=pb.Hello(
            token=self.token, protocol="cfarena.v1", capacity=self.capacity)))

        async def requests() -> AsyncIterator[pb.BotMessage]:
            while (message := await outbox.get()) is not None:
                yield message

        async with grpc.aio.insecure_channel(self.address) as channel:
            call = ArenaStub(channel).Play(requests())
            try:
                async for message in call:
                    kind = message.WhichOneof("kind")
                    if kind == "welcome":
                        self.welcome = message.welcome
                        self._welcomed.set()
                    elif kind == "match_start":
                        self.starts.append(message.match_start)
                    elif kind == "turn":
                        self.turns += 1
                        turn = message.turn
                        outbox.put_nowait(pb.BotMessage(action=pb.Action(
                            match_id=turn.match_id, turn_id=turn.turn_id, move_index=0)))
            except grpc.aio.AioRpcError as exc:
                self.status, self.details = exc.code(), exc.details() or ""
            finally:
                outbox.put_nowait(None)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def ended(self) -> None:
        assert self._task is not None
        await asyncio.wait_for(self._task, 10)


@contextlib.asynccontextmanager
async def referee(tmp: Path, tokens: TokenRegistry) -> AsyncIterator[RefereeServer]:
    server = RefereeServer(tokens, unix_socket=tmp / "arena.sock")
    await server.start()
    try:
        yield server
    finally:
        await server.stop(grace=0.5)


def test_a_seat_pass_admits_one_connection_of_capacity_one(tmp_path: Path) -> None:
    asyncio.run(_a_seat_pass_admits_one_connection_of_capacity_one(tmp_path))


async def _a_seat_pass_admits_one_connection_of_capacity_one(tmp_path: Path) -> None:
    async with referee(tmp_path, TokenRegistry()) as server:
        secret, seat_pass = server.passes.issue("alpha")
        first = Client(f"unix:{tmp_path / 'arena.sock'}", secret, capacity=8)
        await first.start()
        assert first.welcome is not None
        assert first.welcome.bot_name == "alpha"
        assert first.welcome.capacity == 1  # a started process plays one match at a time
        conn = await server.wait_for_pass(seat_pass, timeout=5)
        assert conn.bot_name == "alpha" and conn.seat_pass is seat_pass

        # the same secret again, while the first connection lives: refused
        second = Client(server.address, secret)
        await second.start()
        await second.ended()
        assert second.welcome is None
        assert second.status is grpc.StatusCode.PERMISSION_DENIED
        assert "already used" in second.details

        # after the first connection has gone, still refused (one use, not one at a time)
        await first.stop()
        third = Client(server.address, secret)
        await third.start()
        await third.ended()
        assert third.status is grpc.StatusCode.PERMISSION_DENIED

        # a withdrawn pass is simply unknown
        server.passes.withdraw(seat_pass)
        fourth = Client(server.address, secret)
        await fourth.start()
        await fourth.ended()
        assert fourth.status is grpc.StatusCode.UNAUTHENTICATED
        # and a made-up one too
        forged = Client(server.address, secret[:-2] + "xx")
        await forged.start()
        await forged.ended()
        assert forged.status is grpc.StatusCode.UNAUTHENTICATED


def test_a_pass_connection_is_never_seated_by_bot_name(tmp_path: Path) -> None:
    asyncio.run(_a_pass_connection_is_never_seated_by_bot_name(tmp_path))


async def _a_pass_connection_is_never_seated_by_bot_name(tmp_path: Path) -> None:
    """Only the match its process was started for may use it: seating by name skips it."""
    async with referee(tmp_path, TokenRegistry()) as server:
        clients = []
        for name in ("alpha", "beta"):
            secret, _ = server.passes.issue(name)
            client = Client(server.address, secret)
            await client.start()
            clients.append(client)
        with pytest.raises(SeatingTimeout):
            await server.run_match("by-name", SHORT, 1, ["alpha", "beta"], seat_timeout=0.5)
        assert all(not c.starts for c in clients)
        for client in clients:
            await client.stop()


def test_a_token_seats_only_its_own_bot(tmp_path: Path) -> None:
    asyncio.run(_a_token_seats_only_its_own_bot(tmp_path))


async def _a_token_seats_only_its_own_bot(tmp_path: Path) -> None:
    """`serve`'s registered tokens: a connection plays its own bot's seat, never another's."""
    tokens = TokenRegistry()
    tokens.add("alice", "secret-of-alice")
    tokens.add("bob", "secret-of-bob")
    tokens.add("carol", "secret-of-carol")
    async with referee(tmp_path, tokens) as server:
        alice = Client(server.address, "secret-of-alice", capacity=4)
        bob = Client(server.address, "secret-of-bob", capacity=4)
        await alice.start()
        await bob.start()
        assert alice.welcome is not None and alice.welcome.bot_name == "alice"
        assert bob.welcome is not None and bob.welcome.bot_name == "bob"
        tc = TimeControl(2000)
        first, second = await asyncio.gather(
            server.run_match("m1", SHORT, 7, ["bob", "alice"], tc),
            server.run_match("m2", SHORT, 8, ["alice", "bob"], tc),
        )
        assert first.status == second.status == "finished"
        assert not first.faults and not second.faults
        # each connection was told only its own bot's seat, in every match
        for client, name in ((alice, "alice"), (bob, "bob")):
            assert sorted(s.match_id for s in client.starts) == ["m1", "m2"]
            for start in client.starts:
                assert start.seat_names[start.seat] == name
        # alice's connections (she has free capacity) never stand in for carol
        with pytest.raises(SeatingTimeout):
            await server.run_match("m3", SHORT, 9, ["alice", "carol"], tc, seat_timeout=0.5)
        assert all(s.match_id != "m3" for s in alice.starts)
        await alice.stop()
        await bob.stop()


def test_streams_that_never_say_hello_are_bounded(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A client opening stream after stream without a Hello holds referee memory that no
    bot can be blamed for: past the bound, new streams are refused at once."""
    from cfarena.server.referee import service

    monkeypatch.setattr(service, "MAX_HANDSHAKING", 3)
    asyncio.run(_silent_streams(tmp_path))


async def _silent_streams(tmp_path: Path) -> None:
    async with referee(tmp_path, TokenRegistry()) as server, \
            grpc.aio.insecure_channel(server.address) as channel:
        stub = ArenaStub(channel)
        never: asyncio.Event = asyncio.Event()

        async def silence() -> AsyncIterator[pb.BotMessage]:
            await never.wait()
            yield pb.BotMessage()

        silent = [stub.Play(silence()) for _ in range(3)]
        await asyncio.sleep(0.5)  # the three are waiting for their Hello
        refused = stub.Play(silence())
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await refused.read()
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "waiting to say Hello" in (caught.value.details() or "")
        for call in silent:
            call.cancel()
        # once they are gone (the referee sees the cancellations a moment later: until
        # then a stream is still refused, before its pass is read), a real bot is
        # welcome again
        secret, _ = server.passes.issue("alpha")
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            client = Client(server.address, secret)
            await client.start()
            if client.welcome is not None or asyncio.get_running_loop().time() > deadline:
                break
            assert client.status is grpc.StatusCode.RESOURCE_EXHAUSTED, client.details
            await asyncio.sleep(0.05)
        assert client.welcome is not None
        await client.stop()
