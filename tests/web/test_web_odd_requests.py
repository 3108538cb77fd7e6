"""Odd requests to the web app on both databases (SQLite and PostgreSQL, over real
HTTP: tests/web/inprocess.py): malformed ids and parameters answer 404 or 422, never
503 "the database is not available" (PostgreSQL refuses a NUL in text and an integer
beyond its column's range; SQLite overflowed on an id beyond 64 bits); the admin API
answers 403 when no admin token is configured, whatever is sent."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path

from cfarena.server.storage import open_database
from tests.web.inprocess import request, web_app

ODD = [  # (target as sent, what is odd)
    "/api/matches/a%00b", "/matches/a%00b", "/api/matches/a%00b/log",
    "/matches/a%00b/replay", "/api/matches/a%00b/live",                  # NUL in a match id
    "/api/tournaments/99999999999999999999", "/tournaments/99999999999999999999",
    "/api/tournaments/-99999999999999999999", "/api/tournaments/2147483648",  # out of range
    "/api/bots/a%00b", "/bots/a%00b", "/api/admin/bots/a%00b/rotate",        # NUL in a name
    "/api/leaderboard?pool=a%00b", "/?pool=a%00b", "/api/bots/x?pool=%00",
    "/api/matches?bot=a%00b",                                                # NUL in a query
    "/api/matches/" + "x" * 5000, "/matches/" + "x" * 5000,                  # very long
    "/api/matches/%FF%FE", "/matches/%FF%FE", "/bots/%C0%80",               # not UTF-8
    "/api/tournaments/abc", "/api/matches/%0a", "/matches/%7f"]


def test_malformed_ids_answer_404_or_422_never_503(db_url: str) -> None:
    with web_app(db_url) as port:
        assert request(port, "GET", "/api/leaderboard")[0] == 200  # the database works
        for target in ODD:
            method = "POST" if "/admin/" in target else "GET"
            status, body = request(port, method, target)
            expected = {403} if "/admin/" in target else {404, 422}
            assert status in expected, (target[:60], status, body[:200])
            if target.startswith("/api/"):
                assert "detail" in json.loads(body)
            else:
                assert body.startswith(b"<!doctype html>"), (target[:60], body[:100])


def test_the_admin_api_is_refused_without_an_admin_token(db_url: str) -> None:
    with web_app(db_url, admin_token=None) as port:
        for token in (None, "anything-at-all-0123456789", ""):
            headers = {"Content-Type": "application/json"}
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            for path, body in [("/api/admin/bots", b'{"name": "intruder"}'),
                               ("/api/admin/bots/intruder/rotate", b""),
                               ("/api/admin/bots/intruder/revoke", b""),
                               ("/api/admin/ladder/pause", b""),
                               ("/api/admin/ladder/resume", b"")]:
                status, answer = request(port, "POST", path, body, headers)
                assert (status, json.loads(answer)) == (
                    403, {"detail": "no admin token configured"}), (path, token)
    with open_database(db_url) as db:
        assert [b.name for b in db.list_bots()] == []


def test_a_chunked_body_is_capped_by_its_running_total(tmp_path: Path) -> None:
    """Ten chunks of 8 KiB (each under the 16 KiB cap, 80 KiB in all), sent one at a
    time over a real socket: 413 comes as soon as the total passes the cap (the third
    chunk), before the rest is sent; the app never reads the body to its end."""
    chunk = b" " * (8 * 1024)
    with web_app(f"sqlite:///{tmp_path / 'arena.db'}", admin_token="a" * 32) as port, \
            socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /api/admin/bots HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        answer, sent = b"", 0
        for _ in range(10):
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except OSError:  # hung up on: the answer is there
                break
            sent += 1
            readable, _, _ = select.select([sock], [], [], 0.3)
            if readable:
                answer = sock.recv(4096)
                break
        if not answer:  # all ten went in: end the body, then read the answer
            sock.sendall(b"0\r\n\r\n")
            answer = sock.recv(4096)
    assert answer.split(b"\r\n", 1)[0] == b"HTTP/1.1 413 Request Entity Too Large", answer[:200]
    assert sent <= 3, f"413 only after {sent} chunks of 8 KiB"
