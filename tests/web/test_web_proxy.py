"""The per-client cap on live streams counts the real peer address: an
X-Forwarded-For header counts only from a proxy the organiser names
(`cfarena serve --trusted-proxy`). uvicorn by itself believes the header from
127.0.0.1, so a client on the arena's host (a dial-in bot run next to it, say) could
name a new address for every stream and hold them all. A real `serve`, real sockets."""

from __future__ import annotations

import http.client
from pathlib import Path

from cfarena.server.web.hub import MAX_PER_CLIENT
from tests.web.arena import WebArena


def _open(arena: WebArena, source: str, forwarded: str | None,
          held: list[http.client.HTTPConnection]) -> int:
    """A ladder stream from the loopback address `source`, with this X-Forwarded-For
    (None: no header), kept open in `held`; its status."""
    conn = http.client.HTTPConnection("127.0.0.1", arena.http_port, timeout=30,
                                      source_address=(source, 0))
    held.append(conn)
    headers = {"Accept": "text/event-stream"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    conn.request("GET", "/api/events", headers=headers)
    status = conn.getresponse().status
    return status


def test_forwarded_for_counts_only_from_a_trusted_proxy(tmp_path: Path) -> None:
    held: list[http.client.HTTPConnection] = []
    plain = WebArena(tmp_path / "plain", f"sqlite:///{tmp_path / 'plain.db'}")
    (tmp_path / "plain").mkdir()
    try:
        plain.add_bots(["ruby"])
        plain.serve("--players", "2")
        # a made-up address per stream from 127.0.0.1: all counted as 127.0.0.1
        statuses = [_open(plain, "127.0.0.1", f"10.9.{i}.1", held)
                    for i in range(MAX_PER_CLIENT + 5)]
        assert statuses == [200] * MAX_PER_CLIENT + [429] * 5, statuses
        assert _open(plain, "127.0.0.2", "10.9.0.1", held) == 200  # another peer
    finally:
        for conn in held:
            conn.close()
        held.clear()
        plain.stop_all()
    proxied = WebArena(tmp_path / "proxied", f"sqlite:///{tmp_path / 'proxied.db'}")
    (tmp_path / "proxied").mkdir()
    try:
        proxied.add_bots(["ruby"])
        proxied.serve("--players", "2", "--trusted-proxy", "127.0.0.1")
        # behind the named proxy: its clients are counted one by one
        statuses = [_open(proxied, "127.0.0.1", f"10.9.{i}.1", held)
                    for i in range(MAX_PER_CLIENT + 5)]
        assert statuses == [200] * (MAX_PER_CLIENT + 5), statuses
        repeated = [_open(proxied, "127.0.0.1", "10.9.99.1", held)
                    for _ in range(MAX_PER_CLIENT + 1)]
        assert repeated == [200] * MAX_PER_CLIENT + [429], repeated
        # a peer that is not the proxy is its own address, whatever it sends
        others = [_open(proxied, "127.0.0.3", f"10.8.{i}.1", held)
                  for i in range(MAX_PER_CLIENT + 1)]
        assert others == [200] * MAX_PER_CLIENT + [429], others
    finally:
        for conn in held:
            conn.close()
        proxied.stop_all()
