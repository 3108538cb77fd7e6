"""Hostile bot: tries to take a seat that is not its own (attacks 4 and 5 of tests/fairplay).

(a) At start it looks for credentials wherever it can: CFARENA_TOKEN in every
readable /proc/*/environ, `--token` on every visible command line, and the
files of the places it can see outside the system directories. Any token
found that is not its own is reported (as a hash prefix) and tried.
(b) It connects with a made-up token. (c) Once its match has started (its
first connection is live and seated), it connects a second time with its own
one-time credential. It reports each gRPC status on a `PROBE <name>: <json>`
line and plays random legal moves on its first connection throughout.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import secrets
import threading
from collections.abc import Iterator

import grpc

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub

OWN_TOKEN = os.environ.get("CFARENA_TOKEN", "")
SERVER = os.environ.get("CFARENA_SERVER", "")
TOKEN = re.compile(rb"(?:CFARENA_TOKEN=|--token[=\0 ])([A-Za-z0-9_-]{16,})")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc",
          "/sys", "/dev")


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def _tokens_in(data: bytes) -> set[str]:
    """Credential-looking values after CFARENA_TOKEN= or --token (tokens are url-safe base64)."""
    return {m.group(1).decode() for m in TOKEN.finditer(data)}


def hunt() -> dict[str, list[str]]:
    """Token (other than our own) -> where it was seen."""
    seen: dict[str, list[str]] = {}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            for token in _tokens_in(data):
                seen.setdefault(token, []).append(f"/proc/{pid}/{what}")
    roots = {os.getcwd(), os.environ.get("HOME", "/tmp"), "/tmp", "/run", "/dev/shm", "/var",
             "/home", "/root", "/work", "/mnt", "/srv", "/opt"}
    budget = [20000]  # files read at most
    for root in sorted(roots):
        for top, dirs, files in os.walk(root):
            if top.startswith(SYSTEM) or "site-packages" in top or "/lib/python" in top:
                dirs[:] = []
                continue
            for name in files:
                budget[0] -= 1
                if budget[0] < 0:
                    break
                path = os.path.join(top, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read(1 << 20)
                except OSError:
                    continue
                for token in _tokens_in(data):
                    seen.setdefault(token, []).append(path)
    return {t: where for t, where in seen.items() if t != OWN_TOKEN}


def connect(token: str) -> dict[str, str]:
    """Open Arena.Play with `token` and say what the referee answered."""
    done = threading.Event()

    def requests() -> Iterator[pb.BotMessage]:
        yield pb.BotMessage(hello=pb.Hello(token=token, protocol="cfarena.v1", capacity=1,
                                           client="steal_seat probe"))
        done.wait(10)

    with grpc.insecure_channel(SERVER) as channel:
        call = ArenaStub(channel).Play(requests(), timeout=10)
        try:
            for msg in call:
                kind = msg.WhichOneof("kind")
                name = msg.welcome.bot_name if kind == "welcome" else ""
                return {"code": "ACCEPTED", "details": f"{kind} {name}"}
            return {"code": "OK", "details": "stream ended without a message"}
        except grpc.RpcError as err:
            code = err.code()
            return {"code": code.name if code else "?", "details": err.details() or ""}
        finally:
            done.set()
            call.cancel()


foreign = hunt()
probe("token-hunt", {"foreign_tokens": len(foreign),
                     "where": {_digest(t): w[:5] for t, w in list(foreign.items())[:10]}})
for token in list(foreign)[:5]:
    probe("token-foreign", {"token": _digest(token), **connect(token)})
probe("token-made-up", connect(secrets.token_urlsafe(32)))


class StealSeatBot(Bot):
    def __init__(self) -> None:
        self.tried = False
        self.turns = 0

    def on_match_start(self, match: MatchInfo) -> None:
        # our first connection is live and seated in this match: present its credential again
        probe("token-reuse", {"match": match.match_id, **connect(OWN_TOKEN)})
        self.tried = True

    def choose(self, turn: Turn) -> Move:
        self.turns += 1
        if self.turns == 1:
            probe("token-reuse-after", {"still_playing": True, "tried": self.tried,
                                        "turn_id": turn.turn_id})
        return random.choice(turn.legal_moves)

