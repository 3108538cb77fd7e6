"""`python -m cfarena.sdk.forkserver`: a bot's runtime loaded once, a fresh process per match.

A tournament starts a fresh bot process for every seat of every match, so that
nothing a bot learnt in one match reaches another. Starting Python and importing
gRPC, protobuf and the SDK costs ~100 ms of CPU per process, more than a fast
bot spends playing its match. The arena therefore starts this fork server inside
a bot's sandbox: it imports the SDK (never the bot's own code) and, for each
match, forks a child that imports the bot and runs `python -m cfarena.sdk run`.

It runs only as the second process of its own PID namespace (bubblewrap's init
is the first). Started with the capabilities CAP_SETUID and CAP_SETGID (and no
other), it runs every child as a user of its own, chosen by the arena, with no
capabilities at all: a child can then neither signal nor trace the server, nor
touch what an earlier child left. After a child exits, a cleaner process, as
the child's user, kills every process of that user and deletes its files in
the private /tmp and /dev/shm and its System V IPC objects; only then is the
exit reported. Without those capabilities (bubblewrap in a user namespace, when
the arena does not run as root) children share the server's user, and the
server itself kills every other process of the sandbox and empties the temp
directories. Either way it makes itself non-dumpable, so that no child can
read or write its memory.

Protocol, on the SOCK_SEQPACKET socket whose descriptor is in CFARENA_FORK_FD,
one JSON object per message:
    server -> arena  {"ready": pid, "own_users": bool}      runtime loaded; whether
                                                            children get own users
    arena -> server  {"argv": [...], "env": {...},          fork a child (as user
                      "uid": N} + 1 fd                      N if own_users); the fd
                                                            is its stdout+stderr
    server -> arena  {"started": pid}                       (pid in the sandbox)
    server -> arena  {"exited": code}                       the child ended (code
                                                            -N: killed by signal N),
                                                            the sandbox is clean
The server exits when the arena closes its end.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import sys
import traceback
from collections.abc import Sequence

# the runtime every child shares: loaded once, here (none of it is the bot's code)
import cfarena.sdk.cli as sdk_cli

_PR_SET_DUMPABLE = 4
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_SETGID, _CAP_SETUID = 6, 7
_SYSV_IPC = {"shm": "shmctl", "msg": "msgctl"}  # and "sem": semctl(id, 0, IPC_RMID)
_UID_COLUMN = {"shm": 7, "sem": 4, "msg": 7}
_IPC_RMID = 0
_WIPED = ("/tmp", "/dev/shm")
MESSAGE_BYTES = 65536


def _set_dumpable(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _effective_caps() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def can_switch_users() -> bool:
    """Whether this process may give its children users of their own."""
    needed = (1 << _CAP_SETUID) | (1 << _CAP_SETGID)
    return _effective_caps() & needed == needed and os.getuid() != 0


def _become(uid: int) -> None:
    """Become `uid` (and gid), with no supplementary groups and no capabilities."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    # between two non-root users the kernel keeps capabilities: drop them all
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    if libc.capset(ctypes.byref(header), (_CapData * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if _effective_caps() != 0 or os.getuid() != uid:
        raise OSError("capabilities or user not dropped")


def _send(sock: socket.socket, **message: object) -> None:
    sock.send(json.dumps(message).encode())


def _child(sock: socket.socket, out_fd: int, argv: Sequence[str], env: dict[str, str],
           uid: int | None) -> None:
    """In the forked child: become a plain bot process and run it (never returns)."""
    code = 1
    try:
        sock.close()
        if uid is not None:
            _become(uid)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        _set_dumpable(True)  # like any process: the referee's watchdog reads its /proc
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["python -m cfarena.sdk", *argv]
        code = sdk_cli.main(list(argv))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _users_processes(uid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    found.append(int(name))
    return found


def _remove_ipc(uid: int) -> None:
    """Remove the System V IPC objects `uid` owns (they outlive processes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind in ("shm", "sem", "msg"):
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as table:
            lines = table.read().splitlines()[1:]
        for line in lines:
            fields = line.split()
            column = _UID_COLUMN[kind]  # of the owner's uid, in /proc/sysvipc's tables
            if len(fields) > column and int(fields[column]) == uid:
                ident = int(fields[1])
                if kind == "sem":
                    libc.semctl(ident, 0, _IPC_RMID)
                else:
                    getattr(libc, _SYSV_IPC[kind])(ident, _IPC_RMID, None)


def _clean_sandbox(uid: int | None) -> None:
    """Kill every process of the child's user (of the sandbox but init and this one,
    when children share our user), delete its files in the temp dirs and its IPC."""
    for _ in range(10):  # again, for processes forked while the first signal went out
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL)
        if uid is None or not _users_processes(uid):
            break
    for directory in _WIPED:
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
    if uid is not None:
        _remove_ipc(uid)


def _clean_as(uid: int | None) -> None:
    """Clean up after a child: as its user, in a process of its own, when it had one."""
    if uid is None:
        _clean_sandbox(None)
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _become(uid)
            _clean_sandbox(uid)
            code = 0
        finally:
            os._exit(code)
    _wait(pid)


def _wait(pid: int) -> int:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        return os.waitstatus_to_exitcode(status)


def serve(sock: socket.socket) -> int:
    """Fork a child for each request until the arena closes the socket."""
    _set_dumpable(False)
    own_users = can_switch_users()
    _send(sock, ready=os.getpid(), own_users=own_users)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE_BYTES, 1)
        except ConnectionResetError:
            return 0
        if not data:
            return 0  # the arena is gone
        request = json.loads(data)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            print("fork server: a request without its output descriptor", file=sys.stderr)
            return 2
        out_fd = fds[0]
        uid = int(request["uid"]) if own_users else None
        pid = os.fork()
        if pid == 0:
            _child(sock, out_fd, request["argv"], request["env"], uid)
        os.close(out_fd)
        _send(sock, started=pid)
        code = _wait(pid)
        _clean_as(uid)
        _send(sock, exited=code)


def main() -> int:
    if os.getpid() > 2:
        # killing "every other process" is only safe in a PID namespace of our own
        print("fork server: must run as the first process of its own PID namespace "
              "(inside the arena's sandbox)", file=sys.stderr)
        return 2
    try:
        fd = int(os.environ["CFARENA_FORK_FD"])
    except (KeyError, ValueError):
        print("fork server: CFARENA_FORK_FD is not set", file=sys.stderr)
        return 2
    with socket.socket(fileno=fd) as sock:
        return serve(sock)


if __name__ == "__main__":
    raise SystemExit(main())
