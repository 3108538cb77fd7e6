"""Hostile bot: tries to reach the network (attack 6 of tests/fairplay).

At start it lists its network interfaces (/proc/net/dev) and makes exactly
one TCP connection attempt to each of: 127.0.0.1 on the port the test listens
on (passed as `--name fairplay-port-<N>`: test plumbing only, nothing an
entrant could not guess) and 10.255.255.1:80 (an external address), 1 s
timeout each, sending nothing. It reports each outcome on a `PROBE <name>:
<json>` line and plays random legal moves.
"""

from __future__ import annotations

import errno
import json
import random
import socket
import sys

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import Turn


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def test_port() -> int:
    for i, arg in enumerate(sys.argv):
        text = arg.split("=", 1)[1] if arg.startswith("--name=") else \
            sys.argv[i + 1] if arg == "--name" and i + 1 < len(sys.argv) else ""
        if text.startswith("fairplay-port-"):
            return int(text.rsplit("-", 1)[1])
    raise SystemExit("network.py: run with --name fairplay-port-<N>")


def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return "CONNECTED"
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def interfaces() -> list[str] | str:
    try:
        with open("/proc/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)


probe("net-interfaces", interfaces())
probe("net-loopback", {"port": test_port(), "outcome": connect("127.0.0.1", test_port())})
probe("net-external", {"address": "10.255.255.1:80", "outcome": connect("10.255.255.1", 80)})


class NetworkBot(Bot):
    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
