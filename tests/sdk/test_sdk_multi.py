"""One bot on several referees: address lists, names resolving to several addresses, and
`python -m cfarena.sdk run --server A --server B,C` holding one stream per referee
(real gRPC referees on 127.0.0.1, a real bot subprocess)."""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

import grpc
import pytest

from cfarena.sdk.multi import Target, resolve_servers, split_servers

from .sdk_fake_referee import FakeReferee, Session
from .sdk_samples import match_end, match_start, start_events, turn, welcome
from .test_sdk_cli import _env, _kill, _spawn, run


def test_addresses_are_split_on_commas_and_kept_once_in_order() -> None:
    assert split_servers(["a:1, b:2", "a:1", "[::1]:3,unix:/tmp/x.sock"]) == [
        "a:1", "b:2", "[::1]:3", "unix:/tmp/x.sock"]
    for bad, message in ((["a:1,,b:2"], "empty address"), (["a"], "'a' is not HOST:PORT"),
                         (["a:0"], "not HOST:PORT"), (["a:x"], "not HOST:PORT"),
                         ([":5"], "not HOST:PORT")):
        with pytest.raises(ValueError, match=message):
            split_servers(bad)


def _resolver(table: dict[str, list[str]]) -> Any:
    def resolve(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (ip, port)) for ip in table[host]]
    return resolve


def test_a_name_resolving_to_several_addresses_is_one_target_each() -> None:
    resolve = _resolver({"arenas.example": ["10.0.0.1", "10.0.0.2", "10.0.0.1", "fd00::3"],
                         "one.example": ["10.0.0.9"], "also.example": ["10.0.0.2"]})
    assert resolve_servers(["arenas.example:7", "one.example:7", "10.0.0.5:7",
                            "also.example:7", "gone.example:7", "unix:/s"], resolve) == [
        # over TLS each is checked against the name
        Target("10.0.0.1:7", "arenas.example"), Target("10.0.0.2:7", "arenas.example"),
        Target("[fd00::3]:7", "arenas.example"),
        # one address: kept as given (gRPC resolves it again on every reconnect)
        Target("one.example:7"), Target("10.0.0.5:7"), Target("also.example:7"),
        Target("gone.example:7"), Target("unix:/s")]


def test_the_cli_plays_on_every_referee_with_its_whole_capacity() -> None:
    """Three referees (two by a repeated --server, one in a comma list, one of them
    twice): one stream each, each declaring the bot's capacity, each stream's match
    played; a referee that refuses the token ends only its stream."""
    hellos: list[tuple[int, int]] = []
    actions: list[str] = []

    def script_for(index: int) -> Any:
        async def script(s: Session) -> None:
            hello = await s.hello()
            hellos.append((index, hello.capacity))
            key = f"m{index}"
            await s.send(welcome(), match_start(key), turn(key, 3, start_events()))
            actions.append((await s.action()).match_id)
            await s.send(match_end(key, 2))
        return script

    async def refuse(s: Session) -> None:
        await s.hello()
        await s.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown or missing token")

    async def main() -> None:
        refs = [FakeReferee(script_for(i)) for i in range(3)]
        refused = FakeReferee(refuse)
        for ref in [*refs, refused]:
            await ref.start()
        a, b, c = (r.address for r in refs)
        proc = await _spawn("run", "cfarena.bots.greedy", "--token", "t", "--capacity", "2",
                            "--server", a, "--server", f"{b},{c},{a}",
                            "--server", refused.address, env=_env())
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode == 0, err.decode()
        finally:
            _kill(proc)
        text = err.decode()
        assert f"{refused.address} refused the bot: UNAUTHENTICATED" in text, text
        assert re.search(r"\(\d other streams? still playing\)", text), text
        for ref in refs:
            ref.check()
        for ref in [*refs, refused]:
            await ref.stop()
        assert [r.sessions for r in refs] == [1, 1, 1]

    run(main())
    assert sorted(hellos) == [(0, 2), (1, 2), (2, 2)]
    assert sorted(actions) == ["m0", "m1", "m2"]


def test_every_referee_refusing_exits_1() -> None:
    async def refuse(s: Session) -> None:
        await s.hello()
        await s.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown or missing token")

    async def main() -> None:
        refs = [FakeReferee(refuse) for _ in range(2)]
        for ref in refs:
            await ref.start()
        proc = await _spawn("run", "cfarena.bots.greedy", "--token", "t",
                            "--server", ",".join(r.address for r in refs), env=_env())
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            _kill(proc)
        assert proc.returncode == 1
        assert "refused the bot: UNAUTHENTICATED" in err.decode()
        assert "Traceback" not in err.decode()
        for ref in refs:
            await ref.stop()

    run(main())


def test_a_bad_server_list_is_a_usage_error() -> None:
    async def main() -> None:
        proc = await _spawn("run", "cfarena.bots.greedy", "--token", "t",
                            "--server", "127.0.0.1:1,,127.0.0.1:2", env=_env())
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            _kill(proc)
        assert proc.returncode == 2
        assert err.decode().strip().splitlines() == [
            "python -m cfarena.sdk: error: --server: empty address in "
            "'127.0.0.1:1,,127.0.0.1:2'"]

    run(main())
