"""The gate on the referee's Unix socket (referee/gate.py), with real sockets and real
PID namespaces: it relays bytes both ways, caps the connections of one sandbox (a
process in another PID namespace, made with `unshare`) and reports the sandbox, closes
connections that open no HTTP/2 stream in time, caps all connections together, and
survives running out of descriptors on accept."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

from cfarena.server.referee.gate import HOST, PREFACE_BYTES, FirstStream, GateLimits, SocketGate

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame
HEADERS = b"\x00\x00\x01\x01\x04\x00\x00\x00\x01" + b"\x82"  # HEADERS on stream 1


def test_first_stream_is_the_first_headers_frame_of_a_stream() -> None:
    scan = FirstStream()
    assert len(PREFACE) == PREFACE_BYTES
    window = b"\x00\x00\x04\x08\x00\x00\x00\x00\x00" + b"\x00\x01\x00\x00"
    data = PREFACE + SETTINGS + window
    assert not any(scan.feed(data[i:i + 1]) for i in range(len(data)))  # byte by byte
    assert scan.feed(HEADERS[:4]) is False
    assert scan.feed(HEADERS[4:]) is True
    # a HEADERS frame on stream 0 (a protocol error) opens nothing
    assert FirstStream().feed(PREFACE + b"\x00\x00\x00\x01\x04\x00\x00\x00\x00") is False


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


class Gated:
    """A gate on `path` in front of an echo server; what it reported."""

    def __init__(self, tmp: Path, limits: GateLimits) -> None:
        self.path = tmp / "arena.sock"
        self.upstream = tmp / "upstream.sock"
        self.excess: list[tuple[str, str]] = []
        self.gate = SocketGate(self.path, self.upstream, limits,
                               on_excess=lambda ns, why: self.excess.append((ns, why)))


@contextlib.asynccontextmanager
async def gated(tmp_path: Path, per_sandbox: int = 3, first_stream_s: float = 0.5,
                total: int = 10) -> AsyncIterator[Gated]:
    made = Gated(tmp_path, GateLimits(per_sandbox, first_stream_s, total))
    echo = await asyncio.start_unix_server(_echo, path=str(made.upstream))
    await made.gate.start()
    try:
        yield made
    finally:
        await made.gate.close()
        echo.close()


async def _open(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(str(path))


async def _is_closed(reader: asyncio.StreamReader, within: float = 2.0) -> bool:
    """The gate closed this connection (EOF or reset) within `within` s."""
    try:
        while await asyncio.wait_for(reader.read(65536), within):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


def test_bytes_pass_both_ways_intact(tmp_path: Path) -> None:
    asyncio.run(_bytes_pass(tmp_path))


async def _bytes_pass(tmp_path: Path) -> None:
    async with gated(tmp_path) as made:
        reader, writer = await _open(made.path)
        payload = PREFACE + HEADERS + os.urandom(4 * 1024 * 1024)  # past every buffer
        writer.write(payload)
        echoed = await asyncio.wait_for(reader.readexactly(len(payload)), 30)
        assert echoed == payload
        assert made.gate.held_by(HOST) == 1
        writer.close()
        assert await _is_closed(reader)
        await asyncio.sleep(0.1)
        assert made.gate.connections == 0


def test_what_an_end_wrote_before_closing_is_delivered(tmp_path: Path) -> None:
    asyncio.run(_close_delivers(tmp_path))


async def _close_delivers(tmp_path: Path) -> None:
    """A bot that writes a lot and closes at once: the gate passes it all on before it
    closes the other end (gRPC would otherwise lose the last Action)."""
    received = asyncio.get_running_loop().create_future()

    class Count(asyncio.Protocol):  # a slow reader: the gate holds bytes for it
        total = 0

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.total += len(data)
            self.transport.pause_reading()
            asyncio.get_running_loop().call_later(0.005, self.transport.resume_reading)

        def eof_received(self) -> bool:
            received.set_result(self.total)
            return False

    upstream = tmp_path / "upstream.sock"
    sink = await asyncio.get_running_loop().create_unix_server(Count, path=str(upstream))
    gate = SocketGate(tmp_path / "arena.sock", upstream, GateLimits(3, 5.0, 10))
    await gate.start()
    try:
        _reader, writer = await _open(tmp_path / "arena.sock")
        payload = PREFACE + HEADERS + os.urandom(8 * 1024 * 1024)
        writer.write(payload)
        writer.close()  # after its buffer is written
        assert await asyncio.wait_for(received, 30) == len(payload)
    finally:
        await gate.close()
        sink.close()


def test_a_connection_without_a_stream_is_closed_after_the_timeout(tmp_path: Path) -> None:
    asyncio.run(_no_stream(tmp_path))


async def _no_stream(tmp_path: Path) -> None:
    async with gated(tmp_path) as made:
        idle_r, idle_w = await _open(made.path)
        idle_w.write(PREFACE + SETTINGS)  # a handshake, and never a stream
        streaming_r, streaming_w = await _open(made.path)
        streaming_w.write(PREFACE + SETTINGS + HEADERS)
        assert await _is_closed(idle_r, within=3.0)
        assert made.gate.refused["no stream"] == 1
        assert not await _is_closed(streaming_r, within=1.0)  # past the timeout, still open
        streaming_w.write(b"ping")
        # (what came back before was read by _is_closed)
        assert await asyncio.wait_for(streaming_r.readexactly(4), 5) == b"ping"
        streaming_w.close()


def test_all_connections_together_are_capped(tmp_path: Path) -> None:
    asyncio.run(_total(tmp_path))


async def _total(tmp_path: Path) -> None:
    async with gated(tmp_path, first_stream_s=30, total=4) as made:
        held = [await _open(made.path) for _ in range(4)]
        for _reader, writer in held:  # from this process: the host, not capped per sandbox
            writer.write(PREFACE + HEADERS)
        fifth_r, _fifth_w = await _open(made.path)
        assert await _is_closed(fifth_r)
        assert made.gate.refused["total"] == 1
        assert not any([await _is_closed(r, within=0.2) for r, _w in held])
        held[0][1].close()
        await asyncio.sleep(0.2)
        sixth_r, sixth_w = await _open(made.path)  # room again
        sixth_w.write(PREFACE + HEADERS)
        assert not await _is_closed(sixth_r, within=0.3)


SANDBOX = textwrap.dedent("""
    import json, os, socket, sys, time
    held = []
    for _ in range(int(sys.argv[2])):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        try:
            s.sendall(bytes.fromhex(sys.argv[3]))
        except OSError:  # refused at once: counted as closed below
            pass
        held.append(s)
    time.sleep(1.0)
    closed = 0
    for s in held:
        s.setblocking(False)
        try:
            closed += s.recv(4096, socket.MSG_PEEK) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    print(json.dumps({"namespace": os.readlink("/proc/self/ns/pid"), "closed": closed}))
""")


async def _in_a_sandbox(path: Path, connections: int) -> dict[str, object]:
    """Connect from a process in a PID namespace of its own (as bwrap makes them)."""
    proc = await asyncio.create_subprocess_exec(
        "unshare", "--user", "--map-root-user", "--pid", "--fork",
        sys.executable, "-c", SANDBOX, str(path), str(connections), (PREFACE + HEADERS).hex(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    result: dict[str, object] = json.loads(out)
    return result


def test_one_sandbox_holds_at_most_its_cap_and_is_reported(tmp_path: Path) -> None:
    asyncio.run(_per_sandbox(tmp_path))


async def _per_sandbox(tmp_path: Path) -> None:
    async with gated(tmp_path) as made:
        within = await _in_a_sandbox(made.path, 3)
        assert within["closed"] == 0 and made.excess == []
        over = await _in_a_sandbox(made.path, 6)  # another sandbox: its own count
        assert over["closed"] == 3
        assert made.excess == [(over["namespace"], "connection limit 3 reached")]  # once
        assert made.gate.refused["sandbox limit"] == 3
        assert over["namespace"] != os.readlink("/proc/self/ns/pid")


def test_when_all_connections_are_taken_the_largest_holder_is_reported(tmp_path: Path
                                                                       ) -> None:
    asyncio.run(_largest_holder(tmp_path))


async def _largest_holder(tmp_path: Path) -> None:
    """One sandbox under its own cap fills the gate's total: the next connections are
    refused, and the sandbox holding the most is reported (once), so that it is stopped
    and an honest bot refused meanwhile is not left with the fault."""
    async with gated(tmp_path, per_sandbox=8, first_stream_s=30, total=4) as made:
        hog = await _in_a_sandbox(made.path, 6)
        assert hog["closed"] == 2 and made.gate.refused["total"] == 2
        assert made.excess == [(hog["namespace"], "connection limit reached: held 4 of the "
                                "referee's 4 connections when they ran out")]


CLIENT = textwrap.dedent("""
    import socket, sys
    held = []
    for _ in range(100):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        held.append(s)
    print(len(held), flush=True)
    sys.stdin.readline()
""")

EXHAUST = textwrap.dedent("""
    import asyncio, json, logging, resource, subprocess, sys
    from pathlib import Path
    from cfarena.server.referee.gate import GateLimits, SocketGate

    # the echo server stands for gRPC; its accept (asyncio's) logs EMFILE with a traceback
    logging.getLogger("asyncio").addFilter(
        lambda record: "out of system resource" not in record.getMessage())

    class Echo(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport

        def data_received(self, data):
            self.transport.write(data)

    async def main():
        tmp = Path(sys.argv[1])
        server = await asyncio.get_running_loop().create_unix_server(
            Echo, path=str(tmp / "up.sock"))
        gate = SocketGate(tmp / "gate.sock", tmp / "up.sock",
                          GateLimits(per_sandbox=8, first_stream_s=30, total=1000))
        await gate.start()
        client = await asyncio.create_subprocess_exec(
            sys.executable, "-c", sys.argv[2], str(tmp / "gate.sock"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        opened = int(await client.stdout.readline())
        await asyncio.sleep(1.0)
        exhausted = gate.refused["accept paused"]
        client.stdin.write(b"done\\n")
        await client.wait()
        await asyncio.sleep(1.5)
        r, w = await asyncio.open_unix_connection(str(tmp / "gate.sock"))
        w.write(b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\nhello")
        back = await asyncio.wait_for(r.readexactly(29), 5)
        print(json.dumps({"exhausted": exhausted, "opened": opened,
                          "echoed": back.endswith(b"hello")}))
        await gate.close()
        server.close()

    asyncio.run(main())
""")



def test_running_out_of_descriptors_on_accept_pauses_accepting(tmp_path: Path) -> None:
    """A gate in a process with 64 descriptors, 100 connections to it (from another
    process): accept fails with EMFILE, the gate pauses (no crash, no traceback), and once
    descriptors are free again it accepts and relays."""
    result = subprocess.run([sys.executable, "-c", EXHAUST, str(tmp_path), CLIENT],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    found = json.loads(result.stdout)
    assert found["exhausted"] >= 1, (found, result.stderr)
    assert found["echoed"] is True
    assert "out of file descriptors" in result.stderr
