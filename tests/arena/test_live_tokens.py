"""Tokens and versions at the referee, with the arena's database-backed registry: a
real grpc.aio referee, the real SDK client in this process, a real SQLite file."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from cfarena.bots.random_bot import RandomBot
from cfarena.sdk.client import BotClient, BotConnectionError
from cfarena.server.arena.tokens import REVOKED, ROTATED, LiveTokens
from cfarena.server.referee import RefereeServer
from cfarena.server.storage import Database, hash_token, open_database
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    try:
        yield database
    finally:
        database.close()


async def _connected(server: RefereeServer, n: int) -> None:
    for _ in range(200):
        if len(server.connections()) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{len(server.connections())} connections, wanted {n}")


def _client(server: RefereeServer, token: str, version: str | None = None) -> BotClient:
    return BotClient(RandomBot(), server.address, token, version=version, reconnect=False)


def test_a_bot_added_while_running_plays_and_reports_its_version(db: Database) -> None:
    asyncio.run(_added_while_running(db))


async def _added_while_running(db: Database) -> None:
    tokens = LiveTokens(db)  # empty: the bot is registered after the referee started
    server = RefereeServer(tokens)
    await server.start()
    try:
        db.register_bot("late", hash_token("token-of-late"))
        client = _client(server, "token-of-late", version="1.2")
        task = asyncio.ensure_future(client.run())
        await _connected(server, 1)
        [conn] = server.connections()
        assert (conn.bot_name, conn.version, conn.token_hash) == (
            "late", "1.2", hash_token("token-of-late"))
        # an unknown token is still refused
        stranger = _client(server, "nobody's token")
        with pytest.raises(BotConnectionError, match="unknown or missing token"):
            await stranger.run()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        await server.stop(grace=0)


@pytest.mark.parametrize(("change", "why"), [("revoke", REVOKED), ("rotate", ROTATED)])
def test_a_revoked_or_rotated_token_is_cut_off(db: Database, change: str, why: str) -> None:
    asyncio.run(_cut_off(db, change, why))


async def _cut_off(db: Database, change: str, why: str) -> None:
    db.register_bot("alice", hash_token("token-of-alice"))
    db.register_bot("bob", hash_token("token-of-bob"))
    tokens = LiveTokens(db)
    tokens.sync(db.active_tokens(), time.monotonic(), [])
    server = RefereeServer(tokens)
    await server.start()
    try:
        alice = asyncio.ensure_future(_client(server, "token-of-alice").run())
        bob = asyncio.ensure_future(_client(server, "token-of-bob").run())
        await _connected(server, 2)
        if change == "revoke":
            db.revoke_bot("alice")
        else:
            db.rotate_token("alice", hash_token("alice's new token"))
        closed = tokens.sync(db.active_tokens(), time.monotonic(), server.connections())
        assert len(closed) == 1 and closed[0].startswith("bot alice: connection ")
        with pytest.raises(BotConnectionError) as refused:
            await asyncio.wait_for(alice, 10)
        assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
        assert why in str(refused.value)
        assert not bob.done()  # another bot's connection is untouched
        for _ in range(100):  # the handler unregisters it as its stream ends
            if len(server.connections()) == 1:
                break
            await asyncio.sleep(0.02)
        assert [c.bot_name for c in server.connections()] == ["bob"]
        # the old token is refused from now on
        with pytest.raises(BotConnectionError, match="unknown or missing token"):
            await _client(server, "token-of-alice").run()
        if change == "rotate":  # the new one works
            again = asyncio.ensure_future(_client(server, "alice's new token").run())
            await _connected(server, 2)
            again.cancel()
            await asyncio.gather(again, return_exceptions=True)
        bob.cancel()
        await asyncio.gather(bob, return_exceptions=True)
    finally:
        await server.stop(grace=0)


def test_a_poll_older_than_a_lookup_does_not_drop_its_token(db: Database) -> None:
    asyncio.run(_older_poll(db))


async def _older_poll(db: Database) -> None:
    tokens = LiveTokens(db)
    polled_at = time.monotonic()
    before = db.active_tokens()  # the poll read the database before the bot existed
    db.register_bot("late", hash_token("token-of-late"))
    assert await tokens.resolve("token-of-late") == "late"
    tokens.sync(before, polled_at, [])
    assert tokens.lookup("token-of-late") == "late"
    tokens.sync(db.active_tokens(), time.monotonic(), [])  # a newer poll sees it anyway
    assert tokens.lookup("token-of-late") == "late"


@pytest.mark.parametrize("version", ["v" * 65, "1.0\n"])
def test_a_bad_version_is_refused(db: Database, version: str) -> None:
    asyncio.run(_bad_version(db, version))


async def _bad_version(db: Database, version: str) -> None:
    db.register_bot("alice", hash_token("token-of-alice"))
    server = RefereeServer(LiveTokens(db))
    await server.start()
    try:
        async def hello() -> AsyncIterator[pb.BotMessage]:
            yield pb.BotMessage(hello=pb.Hello(token="token-of-alice", protocol="cfarena.v1",
                                               capacity=1, version=version))
            await asyncio.sleep(10)

        async with grpc.aio.insecure_channel(server.address) as channel:
            call = ArenaStub(channel).Play(hello())
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async for _message in call:
                    pass
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "Hello.version must be at most 64 printable characters" in str(
            refused.value.details())
    finally:
        await server.stop(grace=0)
