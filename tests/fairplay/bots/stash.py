"""Hostile bot: leaves things behind for the next process forked in its sandbox.

Sandboxed SDK bots are forked, a child per match, by a fork server that lives
in their sandbox (`cfarena.sdk.forkserver`). This bot tries to pass anything
from one child to the next. At start it looks for what an earlier child left:
files in /tmp, /dev/shm and $HOME, a System V shared memory segment, a daemon
listening on an abstract Unix socket; it tries to signal the fork server (PID
2). Then it leaves all of those itself (and checks that each really exists)
and plays random legal moves. It reports on `PROBE <name>: <json>` lines.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import Turn

NONCE = secrets.token_hex(8)
SHM_KEY = 0xCF57A5
IPC_CREAT = 0o1000
SOCKET_NAME = b"\0cfarena-stash"
FILES = ("/tmp/cfarena-stash", "/dev/shm/cfarena-stash",
         os.path.join(os.environ.get("HOME", "/tmp"), ".cfarena-stash"))
DAEMON = """
import os, socket, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
s = socket.socket(socket.AF_UNIX)
s.bind(b"\\0cfarena-stash")
s.listen(4)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[1].encode())
    c.close()
"""
libc = ctypes.CDLL(None, use_errno=True)


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def fork_server_start() -> str:
    """Start time of PID 2 (the fork server), which tells one sandbox from another."""
    try:
        with open("/proc/2/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))


def daemon_says() -> str | None:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    try:
        s.connect(SOCKET_NAME)
        return s.recv(64).decode()
    except OSError:
        return None
    finally:
        s.close()


def signal_fork_server() -> str:
    try:
        os.kill(2, signal.SIGSTOP)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    os.kill(2, signal.SIGCONT)
    return "delivered"


def look() -> None:
    found: dict[str, object] = {}
    for path in FILES:
        try:
            with open(path) as f:
                found[path] = f.read()
        except OSError:
            pass
    shm = libc.shmget(SHM_KEY, 0, 0)
    probe("stash-found", {
        "files": found, "shm": shm >= 0, "daemon": daemon_says(),
        "pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(),
        "signal_fork_server": signal_fork_server(), "fork_server": fork_server_start(),
    })


def leave() -> None:
    written = []
    for path in FILES:
        try:
            with open(path, "w") as f:
                f.write(NONCE)
            written.append(path)
        except OSError:
            pass
    shm = libc.shmget(SHM_KEY, 4096, IPC_CREAT | 0o666)
    subprocess.Popen([sys.executable, "-c", DAEMON, NONCE], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True).wait(10)
    said = None
    for _ in range(50):
        said = daemon_says()
        if said:
            break
        time.sleep(0.05)
    probe("stash-left", {"nonce": NONCE, "files": written, "shm": shm >= 0, "daemon": said})


look()
leave()


class StashBot(Bot):
    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
