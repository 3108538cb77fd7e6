"""Hostile clients of a real `cfarena serve`'s web side (SQLite file, dial-in bot
processes, real HTTP over sockets): nothing an anonymous client sends may hold up
the event loop the referee shares with the web app; and no arena shows the seed of a
match another arena may still be playing."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cfarena.server.storage import open_database
from cfarena.server.web.hub import MAX_VIEWERS
from tests.harness.serve import lost
from tests.web.arena import WebArena, web_arena

BOTS = {"jade": "greedy", "onyx": "random"}
BIG = 64 * 1024 * 1024  # bytes of JSON an anonymous client posts
# the page flood: over the replays of this many matches (none is cached: each request
# replays its match), for this long (the heartbeat's age is read every 0.2 s); with the
# web's reads in the loop's default executor the heartbeat was 6 s old, the whole flood
FLOODED = 10
FLOOD_S = 6.0


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebArena]:
    directory = tmp_path_factory.mktemp("hostile")
    db = f"sqlite:///{directory / 'arena.db'}"
    with web_arena(directory, db, BOTS, "--players", "2", "--concurrency", "2") as running:
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


def _status(db: str, match_id: str) -> str:
    with open_database(db) as store:
        found = [st for i, _t, st, _log in store.same_deal(match_id) if i == match_id]
    return found[0].value if found else "none"


def _write_lock_free(path: Path) -> bool:
    """Whether SQLite's write lock is free now: an arena frozen while it holds it (in its
    heartbeat or a store) would hold every writer off for the whole freeze, the other
    arena's abort included (a freeze of the arena's storage, not of its match)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        conn.close()


def test_a_match_of_a_silent_arena_still_in_play_shows_no_seed(tmp_path: Path) -> None:
    """Arena a stops beating (frozen: SIGSTOP; a network cut from the database does the
    same) while its match is in play; arena b marks that match aborted ("arena a
    died"). a is alive and may play on once it runs again, so the match's seed (every
    hand and the boneyard) must not be served meanwhile, by either arena. When a wakes
    it finds the match lost (its lease revoked: it stores nothing of it), and the match
    stays aborted, its deal never shown (no log of it exists)."""
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = WebArena(tmp_path / "a", db), WebArena(tmp_path / "b", db)
    try:
        a.add_bots(["ruby", "jade"])
        a.serve("--players", "2", "--dead-after", "3")
        a.bot("ruby", "montecarlo")
        a.bot("jade", "greedy")
        ladder = a.sse("/api/events")
        serve = a.procs["serve"]
        match_id = None
        for _ in range(10):  # freeze a while one of its matches is in play
            seen = len(ladder.events)

            def started_since(seen: int = seen) -> bool:
                return "started" in [k for _t, k, _d in ladder.events[seen:]]

            a.wait("a match starts", started_since, 30)
            os.killpg(serve.pid, signal.SIGSTOP)
            started = [json.loads(d)["match"] for _t, k, d in ladder.events if k == "started"]
            if _status(db, started[-1]) == "running" and _write_lock_free(tmp_path / "arena.db"):
                match_id = started[-1]
                break
            os.killpg(serve.pid, signal.SIGCONT)
        assert match_id is not None, "no match caught in play"
        b.serve("--players", "2", "--dead-after", "3")
        b.wait("b marks a's match aborted",
               lambda: b.get(f"/api/matches/{match_id}").json()["status"] == "aborted", 30)
        answers = {path: b.get(path) for path in [
            f"/api/matches/{match_id}", f"/matches/{match_id}",
            f"/api/matches/{match_id}/log", f"/matches/{match_id}/replay"]}
        detail = answers[f"/api/matches/{match_id}"].json()
        os.killpg(serve.pid, signal.SIGCONT)  # a runs again
        said_lost = lost(match_id)
        a.wait("a finds the match lost", lambda: bool(said_lost.search(a.err())), 60)
        after = {path: b.get(path) for path in answers}
        with open_database(db) as store:
            stored = store.get_match(match_id)
        assert stored is not None
        seed = str(stored.match.seed)
        # while a could still play it, and after, nothing showed the deal
        assert detail["revealed"] is False and detail["seed"] is None, detail
        assert after[f"/api/matches/{match_id}"].json()["status"] == "aborted"
        assert after[f"/api/matches/{match_id}"].json()["seed"] is None
        for path, reply in [*answers.items(), *after.items()]:
            assert seed not in reply.text, path
        for replies in (answers, after):
            assert replies[f"/api/matches/{match_id}/log"].status == 409
            assert replies[f"/matches/{match_id}/replay"].status == 409
    finally:
        with contextlib.suppress(ProcessLookupError, KeyError):
            os.killpg(a.procs["serve"].pid, signal.SIGCONT)
        a.stop_all()
        b.stop_all()


def _stream_status(arena: WebArena, path: str, source: str,
                   held: list[http.client.HTTPConnection]) -> int:
    """Open a server-sent-event stream from `source` (a loopback address) and keep it
    open (in `held`); its status."""
    conn = http.client.HTTPConnection("127.0.0.1", arena.http_port, timeout=30,
                                      source_address=(source, 0))
    held.append(conn)
    conn.request("GET", path, headers={"Accept": "text/event-stream"})
    return conn.getresponse().status


def test_one_client_cannot_hold_every_live_stream(arena: WebArena) -> None:
    """A client opening stream after stream gets its share (429 beyond it), and a
    spectator at another address still gets a stream."""
    held: list[http.client.HTTPConnection] = []
    try:
        hoarded = [_stream_status(arena, "/api/events", "127.0.0.1", held)
                   for _ in range(MAX_VIEWERS)]
        assert hoarded[0] == 200 and set(hoarded) <= {200, 429}
        assert hoarded.count(200) < MAX_VIEWERS // 4, hoarded.count(200)
        assert _stream_status(arena, "/api/events", "127.0.0.2", held) == 200
        assert _stream_status(arena, "/api/matches/nothing-such/live", "127.0.0.3",
                              held) == 404
    finally:
        for conn in held:
            conn.close()


def test_a_flood_of_page_requests_does_not_hold_up_the_arenas_heartbeat(
        arena: WebArena) -> None:
    """Anonymous clients asking for costly pages (replays not rendered yet, bot pages)
    as fast as they can: the arena's own database work (its heartbeat, which other
    arenas on the database take as alive or dead after --dead-after, at least 3 s)
    must not wait behind them."""
    db = arena.db.removeprefix("sqlite:///")
    arena.wait(f"{FLOODED} finished matches", lambda: len(arena.get(
        "/api/matches?status=finished&limit=100").json()) >= FLOODED, 60)
    ids = [m["id"] for m in arena.get("/api/matches?status=finished&limit=100").json()]

    def heartbeat_age() -> float:
        with contextlib.closing(sqlite3.connect(db, timeout=10)) as con:
            age = con.execute("select (julianday('now') - julianday(max(heartbeat_at)))"
                              " * 86400 from arenas").fetchone()[0]
        return float(age)

    stop = threading.Event()

    def flood(k: int) -> None:
        while not stop.is_set():
            arena.get(f"/matches/{ids[k % len(ids)]}/replay")
            arena.get("/api/bots/jade")
            k += 7

    clients = [threading.Thread(target=flood, args=(k,)) for k in range(30)]
    for client in clients:
        client.start()
    worst = 0.0
    try:
        deadline = time.monotonic() + FLOOD_S
        while time.monotonic() < deadline:
            worst = max(worst, heartbeat_age())
            time.sleep(0.2)
    finally:
        stop.set()
        for client in clients:
            client.join()
    assert worst < 3.0, f"the heartbeat was {worst:.1f} s old"
