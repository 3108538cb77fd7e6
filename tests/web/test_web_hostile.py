"""Hostile clients of a real `cfarena serve`'s web side (SQLite file, dial-in bot
processes, real HTTP over sockets): nothing an anonymous client sends may hold up
the event loop the referee shares with the web app."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.web.arena import WebArena, web_arena

BOTS = {"jade": "greedy", "onyx": "random"}
BIG = 64 * 1024 * 1024  # bytes of JSON an anonymous client posts


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebArena]:
    directory = tmp_path_factory.mktemp("hostile")
    db = f"sqlite:///{directory / 'arena.db'}"
    with web_arena(directory, db, BOTS, "--players", "2") as running:
        running.wait("a finished match",
                     lambda: running.get("/api/matches?status=finished&limit=1").json() != [])
        yield running


def _raw_post(arena: WebArena, path: str, head: list[str], body: Iterator[bytes]) -> bytes:
    """POST `body` (sent as fast as the server takes it; the server may hang up
    early) with these extra header lines; the first line of the answer."""
    with socket.create_connection(("127.0.0.1", arena.http_port), timeout=120) as sock:
        lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1",
                 "Content-Type: application/json", *head, "", ""]
        sock.sendall("\r\n".join(lines).encode())
        try:
            for chunk in body:
                sock.sendall(chunk)
        except OSError:  # refused before the end: what matters is the answer
            pass
        answer = b""
        while b"\r\n" not in answer:
            got = sock.recv(4096)
            if not got:
                break
            answer += got
        return answer.split(b"\r\n", 1)[0]


def _json_body(size: int) -> Iterator[bytes]:
    """`{"name": [[1,2,3,{"a":1}], ...]}` of about `size` bytes (costly to parse)."""
    item = b'[1,2,3,{"a":1}],'
    block = item * (1024 * 1024 // len(item))
    yield b'{"name": ['
    for _ in range(size // len(block)):
        yield block
    yield b"1]}"


def _lag_while(arena: WebArena, action: threading.Thread) -> float:
    """The slowest answer to a small GET while `action` runs (the loop's lag)."""
    slowest = 0.0
    action.start()
    while action.is_alive():
        started = time.monotonic()
        assert arena.get("/api/matches?limit=1").status == 200
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.02)
    action.join()
    return slowest


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_anonymous_huge_body_is_refused_without_stalling_the_loop(
        arena: WebArena, chunked: bool) -> None:
    answers: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for part in _json_body(BIG):
            yield (f"{len(part):x}\r\n".encode() + part + b"\r\n") if chunked else part
        if chunked:
            yield b"0\r\n\r\n"

    head = (["Transfer-Encoding: chunked"] if chunked
            else [f"Content-Length: {sum(len(p) for p in _json_body(BIG))}"])
    post = threading.Thread(target=lambda: answers.append(
        _raw_post(arena, "/api/admin/bots", head, chunks())))
    lag = _lag_while(arena, post)
    assert answers and b" 413 " in answers[0], answers
    assert lag < 1.0, f"the event loop stalled {lag:.1f} s"
    # a normal admin request still works (the body limit is far above it)
    assert arena.post("/api/admin/bots", {"name": "x" * 40}, token=None).status == 401
