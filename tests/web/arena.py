"""A real `cfarena serve` with its web page, and dial-in bot processes, for the web
tests: started as subprocesses (each in its own process group, stopped by it, also
on failure), read over real HTTP (urllib, and a thread per server-sent-event stream)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from cfarena.server.credentials import hash_token
from cfarena.server.storage import open_database
from tests.harness.serve import Arena

ADMIN_TOKEN = "admin-token-for-the-web-tests-0123456789"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class SseStream:
    """Every event of one server-sent-event stream, as (monotonic time, event, data)."""

    events: list[tuple[float, str, str]] = field(default_factory=list)
    status: int | None = None
    done: threading.Event = field(default_factory=threading.Event)
    conn: http.client.HTTPConnection | None = None

    def kinds(self) -> list[str]:
        return [kind for _t, kind, _d in self.events]

    def close(self) -> None:
        conn = self.conn
        if conn is not None and conn.sock is not None:
            with suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)


class WebArena(Arena):
    """serve (with its HTTP port and an admin token) and bots; see `web_arena`."""

    def __init__(self, directory: Path, db: str) -> None:
        super().__init__(directory, db)
        self.tokens: dict[str, str] = {}
        self.streams: list[SseStream] = []

    # --------------------------------------------------------------- processes
    def serve(self, *args: str, admin: bool = True) -> None:  # type: ignore[override]
        token_file = self.dir / "admin-token"
        token_file.write_text(ADMIN_TOKEN + "\n")
        admin_args = ["--admin-token-file", str(token_file)] if admin else []
        super().serve(*admin_args, *args, http=True)

    @property
    def port(self) -> int:
        return self.ports["serve"].bots

    @property
    def http_port(self) -> int:
        port = self.ports["serve"].http
        assert port is not None
        return port

    def add_bots(self, names: list[str]) -> None:
        """Register bots (in one connection: opening a database checks its schema)."""
        with open_database(self.db) as db:
            for name in names:
                token = f"token-of-{name}-0123456789"
                db.register_bot(name, hash_token(token))
                self.tokens[name] = token

    def bot(self, name: str, sample: str, token: str | None = None, *args: str) -> None:
        self.dial_in(name, sample, f"127.0.0.1:{self.port}", token or self.tokens[name],
                     "--retries", "50", "-q", *args, env={"CFARENA_MC_BUDGET_MS": "3"})

    def stop_all(self) -> None:
        for stream in self.streams:
            stream.close()
        for name in [n for n in self.procs if n != "serve"]:
            self.stop(name)
        self.stop("serve")

    # -------------------------------------------------------------------- HTTP
    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def request(self, method: str, path: str, body: Any = None,
                token: str | None = None) -> Reply:
        headers = {"Accept": "*/*"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        req = Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urlopen(req, timeout=30) as resp:
                return Reply(resp.status, dict(resp.headers), resp.read())
        except HTTPError as exc:
            return Reply(exc.code, dict(exc.headers), exc.read())

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None, token: str | None = ADMIN_TOKEN) -> Reply:
        return self.request("POST", path, body, token)

    def sse(self, path: str) -> SseStream:
        """Record the server-sent events of `path` in a thread until the stream ends
        (or `close()`)."""
        stream = SseStream()
        self.streams.append(stream)

        def run() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=60)
            stream.conn = conn
            try:
                conn.request("GET", path, headers={"Accept": "text/event-stream"})
                resp = conn.getresponse()
                stream.status = resp.status
                kind, data = "message", []
                while True:
                    # the response's own lines (chunks decoded): "" when the server ends
                    # it, not when it closes the kept-alive connection (5 s later)
                    line = resp.readline()
                    if not line:
                        break
                    text = line.decode("utf-8").rstrip("\r\n")
                    if text.startswith("event:"):
                        kind = text[6:].strip()
                    elif text.startswith("data:"):
                        data.append(text[5:].strip())
                    elif text == "":
                        if data:
                            stream.events.append((time.monotonic(), kind, "\n".join(data)))
                        kind, data = "message", []
            except (OSError, http.client.HTTPException):  # (closed within a chunk)
                pass
            finally:
                conn.close()
                stream.done.set()

        threading.Thread(target=run, daemon=True).start()
        return stream


@contextmanager
def web_arena(directory: Path, db: str, bots: dict[str, str], *serve_args: str,
              admin: bool = True) -> Iterator[WebArena]:
    """serve on `db` with the web page, and one dial-in process per bot (name ->
    sample), all stopped at the end."""
    arena = WebArena(directory, db)
    try:
        arena.add_bots(list(bots))
        arena.serve(*serve_args, admin=admin)
        for name, sample in bots.items():
            arena.bot(name, sample)
        yield arena
    finally:
        arena.stop_all()


def board_full(board: dict[str, Any], bots: int) -> bool:
    """A finished match, and every bot on the leaderboard (`/api/leaderboard`: a pool's
    rows are there from its first scheduled match, and cached once one has finished)."""
    return bool(board["finished"]) and len(board["rows"]) == bots


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag of a page with its attributes, in order."""
    parser = _Elements()
    parser.feed(html)
    return parser.found


def by_id(html: str, ident: str) -> tuple[str, dict[str, str]]:
    found = [(t, a) for t, a in elements(html) if a.get("id") == ident]
    assert len(found) == 1, f"#{ident}: {len(found)} elements"
    return found[0]


def response_schema(doc: dict[str, Any], path: str, status: int, method: str = "get"
                    ) -> dict[str, Any]:
    """The JSON schema of an answer, from the OpenAPI description (its components
    alongside, for the $refs)."""
    answer = doc["paths"][path][method]["responses"][str(status)]
    schema: dict[str, Any] = answer["content"]["application/json"]["schema"]
    return {**schema, "components": doc["components"]}
