"""One bot on several referees: address lists, names resolving to several addresses, and
`python -m cfarena.sdk run --server A --server B,C` holding one stream per referee
(real gRPC referees on 127.0.0.1, a real bot subprocess)."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest

from cfarena.bots.greedy import GreedyBot
from cfarena.sdk.client import BotConnectionError
from cfarena.sdk.multi import MultiClient, Target, make_clients, resolve_servers, split_servers
from cfarena.v1.arena_pb2_grpc import add_ArenaServicer_to_server

from .sdk_fake_referee import FakeReferee, Session, _Servicer
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


class _TlsReferee(FakeReferee):
    """The scripted referee over TLS, on a given loopback address."""

    def __init__(self, script: Any, host: str, cert: Path, key: Path) -> None:
        super().__init__(script)
        self.host, self.cert, self.key = host, cert, key

    async def start(self, port: int = 0) -> int:
        server = grpc.aio.server()
        add_ArenaServicer_to_server(_Servicer(self), server)
        creds = grpc.ssl_server_credentials([(self.key.read_bytes(), self.cert.read_bytes())])
        self.port = server.add_secure_port(f"{self.host}:{port}", creds)
        assert self.port, f"could not bind {self.host}:{port}"
        await server.start()
        self.server = server
        return self.port


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl binary is needed to make a test certificate"
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj",
         f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"],
        check=True, capture_output=True, timeout=60)
    return cert, key


def test_over_tls_each_address_of_a_name_is_checked_against_the_name(tmp_path: Path) -> None:
    """A name with two addresses (two referees on 127.0.0.1 and 127.0.0.2, one port):
    one TLS stream each, verified against the name (the certificate names no IP); the
    same addresses under a name the certificate does not carry are refused."""
    cert, key = _certificate(tmp_path, "arenas.test")
    seen: list[str] = []

    def script_for(host: str) -> Any:
        async def script(s: Session) -> None:
            await s.hello()
            await s.send(welcome(), match_start("m"), turn("m", 3, start_events()))
            await s.action()
            seen.append(host)
            await s.send(match_end("m", 2))
        return script

    async def main() -> None:
        first = _TlsReferee(script_for("127.0.0.1"), "127.0.0.1", cert, key)
        port = await first.start()
        second = _TlsReferee(script_for("127.0.0.2"), "127.0.0.2", cert, key)
        await second.start(port)
        resolve = _resolver({"arenas.test": ["127.0.0.1", "127.0.0.2"],
                             "impostor.test": ["127.0.0.1", "127.0.0.2"]})
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        try:
            client = make_clients(GreedyBot(), resolve_servers([f"arenas.test:{port}"], resolve),
                                  "t", credentials=credentials, reconnect=False)
            assert isinstance(client, MultiClient) and len(client.clients) == 2
            await client.run()
            wrong = make_clients(GreedyBot(),
                                 resolve_servers([f"impostor.test:{port}"], resolve), "t",
                                 credentials=credentials, reconnect=False)
            with pytest.raises(BotConnectionError, match="cannot connect"):
                await wrong.run()
        finally:
            await first.stop()
            await second.stop()
        first.check()
        second.check()

    run(main())
    assert sorted(seen) == ["127.0.0.1", "127.0.0.2"]
