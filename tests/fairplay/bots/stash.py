"""Hostile bot: leaves things behind for the next process forked in its sandbox.

Sandboxed SDK bots are forked, a child per match, by a fork server that lives
in their sandbox (`cfarena.sdk.forkserver`). This bot tries to pass anything
from one child to the next. At start it looks for what an earlier child left:
files in /tmp, /dev/shm and $HOME, a System V shared memory segment, a daemon
listening on an abstract Unix socket, a file in a read-only directory, a
segment given away to another owner; it tries to signal the fork server (PID
2). Then it leaves all of those itself (and checks that each really exists),
tries a POSIX message queue, and plays random legal moves; when its match
ends it starts a daemon that keeps sending SIGKILL to every process it may (the
cleaner that comes after it, if it can). It reports on `PROBE <name>: <json>`
lines.
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
from cfarena.sdk.types import MatchResult, Turn

NONCE = secrets.token_hex(8)
SHM_KEY = 0xCF57A5
IPC_CREAT = 0o1000
SOCKET_NAME = b"\0cfarena-stash"
FILES = ("/tmp/cfarena-stash", "/dev/shm/cfarena-stash",
         os.path.join(os.environ.get("HOME", "/tmp"), ".cfarena-stash"),
         "/tmp/cfarena-keep/stash")  # its directory is made read-only
GIVEN_KEY = 0xCF57A6  # a segment whose owner it changes to another uid
IPC_SET = 1
KILLER = """
import os, signal, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
end = time.monotonic() + 30
while time.monotonic() < end:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    time.sleep(0.0005)
"""


class ShmidDs(ctypes.Structure):  # struct shmid_ds, x86-64: ipc_perm first
    _fields_ = [("key", ctypes.c_int), ("uid", ctypes.c_uint), ("gid", ctypes.c_uint),
                ("cuid", ctypes.c_uint), ("cgid", ctypes.c_uint), ("mode", ctypes.c_ushort),
                ("pad1", ctypes.c_ushort), ("seq", ctypes.c_ushort), ("pad2", ctypes.c_ushort),
                ("unused1", ctypes.c_ulong), ("unused2", ctypes.c_ulong),
                ("segsz", ctypes.c_size_t), ("atime", ctypes.c_long), ("dtime", ctypes.c_long),
                ("ctime", ctypes.c_long), ("cpid", ctypes.c_int), ("lpid", ctypes.c_int),
                ("nattch", ctypes.c_ulong), ("unused4", ctypes.c_ulong),
                ("unused5", ctypes.c_ulong)]
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
    given = libc.shmget(GIVEN_KEY, 0, 0)
    probe("stash-found", {
        "files": found, "shm": shm >= 0, "given_shm": given >= 0, "daemon": daemon_says(),
        "pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(),
        "signal_fork_server": signal_fork_server(),
        # which sandbox: its PID namespace, and when its fork server started (a
        # namespace number may be reused once its sandbox is gone; a start time, in
        # clock ticks, may be shared by two servers started at once)
        "fork_server": f"{os.readlink('/proc/self/ns/pid')}@{fork_server_start()}",
    })


def give_away_segment() -> bool:
    """A segment whose owner is then set to another uid (it still names its creator)."""
    ident = libc.shmget(GIVEN_KEY, 4096, IPC_CREAT | 0o666)
    if ident < 0:
        return False
    ds = ShmidDs()
    if libc.shmctl(ident, 2, ctypes.byref(ds)) != 0:  # IPC_STAT
        return False
    ds.uid = 4242
    return libc.shmctl(ident, IPC_SET, ctypes.byref(ds)) == 0


def message_queue() -> str:
    libc.mq_open.restype = ctypes.c_int
    fd = libc.mq_open(b"/cfarena-stash", os.O_CREAT | os.O_RDWR, 0o666, None)
    if fd < 0:
        return errno.errorcode.get(ctypes.get_errno(), "?")
    return "opened"


def leave() -> None:
    os.makedirs("/tmp/cfarena-keep", exist_ok=True)
    written = []
    for path in FILES:
        try:
            with open(path, "w") as f:
                f.write(NONCE)
            written.append(path)
        except OSError:
            pass
    os.chmod("/tmp/cfarena-keep", 0o555)
    shm = libc.shmget(SHM_KEY, 4096, IPC_CREAT | 0o666)
    given = give_away_segment()
    subprocess.Popen([sys.executable, "-c", DAEMON, NONCE], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True).wait(10)
    said = None
    for _ in range(50):
        said = daemon_says()
        if said:
            break
        time.sleep(0.05)
    probe("stash-left", {"nonce": NONCE, "files": written, "shm": shm >= 0,
                         "given_shm": given, "daemon": said, "mqueue": message_queue()})


look()
leave()


class StashBot(Bot):
    def on_match_end(self, result: MatchResult) -> None:
        subprocess.Popen([sys.executable, "-c", KILLER], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True).wait(10)
        probe("killer", {"started": True})

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
