"""`python -m cfarena.sdk.forkserver`: a bot's runtime loaded once, a fresh process per match.

A tournament starts a fresh bot process for every seat of every match, so that
nothing a bot learnt in one match reaches another. Starting Python and importing
gRPC, protobuf and the SDK costs ~100 ms of CPU per process, more than a fast
bot spends playing its match. The arena therefore starts this fork server inside
a bot's sandbox: it imports the SDK (never the bot's own code) and, for each
match, forks a child that imports the bot and runs `python -m cfarena.sdk run`.

The arena starts it only with its own interpreter, in isolated mode (`python
-I`: no working directory, user site or PYTHON* variables on the import path),
so nothing of an entrant's runs in it: it holds capabilities that its children
must not have. It runs only as the second process of its own PID namespace
(bubblewrap's init is the first). Started with the capabilities CAP_SETUID and
CAP_SETGID (and no other), it runs every child as a user of its own, chosen by
the arena, with no capabilities at all: a child can neither signal nor trace
the server. After a child exits, a cleaner process, as the child's user, kills
every process of that user, deletes the files in the private /tmp and /dev/shm
and removes the System V IPC objects; the cleaner's real and saved uid are a
spare one, so that the child's leftovers cannot signal it. If anything of the
child survives (a process, a file, an IPC object), the server exits and the
sandbox ends; only a clean sandbox reports the exit. Without those
capabilities (bubblewrap in a user namespace, when the arena does not run as
root) children share the server's user, and the server itself kills every
other process of the sandbox and cleans up. Either way it makes itself
non-dumpable, so that no child can read or write its memory.

What a child could still leave for a later child of the same sandbox (the PID
counter, the server's CPU counters in /proc/2/stat) is why the arena never
forks, in one sandbox, a child for a deal that an earlier child played or could
have heard of (tournament/forks.py).

Protocol, on the SOCK_SEQPACKET socket whose descriptor is in CFARENA_FORK_FD,
one JSON object per message:
    server -> arena  {"ready": pid, "own_users": bool}      runtime loaded; whether
                                                            children get own users
    arena -> server  {"argv": [...], "env": {...},          fork a child (as user
                      "uid": N, "spare_uid": M} + 1 fd      N if own_users; M for
                                                            its cleaner); the fd
                                                            is its stdout+stderr
    server -> arena  {"started": pid}                       (pid in the sandbox)
    server -> arena  {"exited": code}                       the child ended (code
                                                            -N: killed by signal N),
                                                            the sandbox is clean
The server exits when the arena closes its end.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # the runtime imported below (and the bots `--preload` names) makes some 26,000
    # objects that live as long as the server, hardly any garbage, yet the collector
    # would run some 40 times over them while they load: off until `main` has loaded
    # everything, which then freezes them and turns it back on before it serves
    # (collection state is the process's own: every child inherits the same)
    gc.disable()

import contextlib
import ctypes
import importlib
import io
import json
import os
import shutil
import signal
import socket
import sys
import time
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


def _become(uid: int, real: int | None = None) -> None:
    """Become `uid` (and gid), with no supplementary groups and no capabilities; with
    `real`, that is the real and saved uid and `uid` only the effective one."""
    os.setgroups([])
    other = uid if real is None else real
    os.setresgid(other, uid, other)
    os.setresuid(other, uid, other)
    libc = ctypes.CDLL(None, use_errno=True)
    # between two non-root users the kernel keeps capabilities: drop them all
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    if libc.capset(ctypes.byref(header), (_CapData * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if _effective_caps() != 0 or os.geteuid() != uid:
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
        if env.get("PYTHONUNBUFFERED"):  # what `python -u` would give it
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        # the server runs isolated (`python -I`): the child gets the working directory
        # on its path, as `python -m cfarena.sdk run` would
        sys.path.insert(0, os.getcwd())
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
    """The live (not zombie) processes of `uid` but this one."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            with contextlib.suppress(OSError, IndexError):
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as stat:
                    if stat.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                        found.append(int(name))
    return found


def _ipc_entries() -> dict[str, list[list[str]]]:
    """The rows of /proc/sysvipc's tables (the IPC namespace is the sandbox's own)."""
    tables: dict[str, list[list[str]]] = {}
    for kind in ("shm", "sem", "msg"):
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as table:
            tables[kind] = [line.split() for line in table.read().splitlines()[1:]]
    return tables


def _remove_ipc() -> None:
    """Remove every System V IPC object we may: as the child's user, those it owns or
    created (an object given away to another owner still names its creator)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, rows in _ipc_entries().items():
        for fields in rows:
            ident = int(fields[1])
            if kind == "sem":
                libc.semctl(ident, 0, _IPC_RMID)
            else:
                getattr(libc, _SYSV_IPC[kind])(ident, _IPC_RMID, None)


def _remove_tree(path: str) -> None:
    """Delete `path`, first making each directory writable (a child may leave 0555)."""
    def unlock(_func: object, failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, onerror=unlock)
        else:
            os.unlink(path)


def _temp_entries() -> set[str]:
    """Every path in the private temp directories (not below another mount, such as a
    bound working directory): what the sandbox had before any child is its baseline."""
    found: set[str] = set()
    for top in _WIPED:
        try:
            device = os.stat(top).st_dev
        except OSError:
            continue
        for root, dirs, files in os.walk(top):
            kept = []
            for name in dirs:
                path = os.path.join(root, name)
                found.add(path)
                with contextlib.suppress(OSError):
                    if os.lstat(path).st_dev == device and not os.path.islink(path):
                        kept.append(name)
            dirs[:] = kept
            found.update(os.path.join(root, name) for name in files)
    return found


BASELINE: set[str] = set()  # _temp_entries() when the server started


def _clean_sandbox(uid: int | None) -> None:
    """Kill every process of the child's user (of the sandbox but init and this one,
    when children share our user), delete its files in the temp dirs and its IPC."""
    deadline = time.monotonic() + 2.0
    while True:  # again, for processes forked while the signal went out
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL)
        if uid is None or not _users_processes(uid) or time.monotonic() > deadline:
            break
        time.sleep(0.002)
    # deepest first; a directory of the baseline stays, what a child put in it goes
    for path in sorted(_temp_entries() - BASELINE, key=len, reverse=True):
        _remove_tree(path)
    _remove_ipc()


def _clean_as(uid: int | None, spare_uid: int | None) -> None:
    """Clean up after a child: as its user, in a process of its own, when it had one.

    The cleaner's real and saved uid are a spare one (its effective uid is the
    child's): it may signal the child's leftovers, they may not signal it."""
    if uid is None:
        _clean_sandbox(None)
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            assert spare_uid is not None
            _become(uid, real=spare_uid)
            _clean_sandbox(uid)
            code = 0
        finally:
            os._exit(code)
    if _wait(pid) != 0:
        raise SandboxDirty("the cleaner failed")


def _wait(pid: int) -> int:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        return os.waitstatus_to_exitcode(status)


class SandboxDirty(Exception):
    """Something of a child survived the clean-up: the sandbox must not be used again."""


def _others() -> list[int]:
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit()
                  and int(p) not in (1, os.getpid()))


def _check_clean() -> None:
    """SandboxDirty unless only bwrap's init and this server run, and nothing is left
    in the temp directories or the IPC namespace."""
    deadline = time.monotonic() + 2.0
    while _others() and time.monotonic() < deadline:
        time.sleep(0.005)  # killed ones are gone once init has reaped them
    if _others():
        raise SandboxDirty(f"processes left: {_others()}")
    now = _temp_entries()
    if now != BASELINE:
        raise SandboxDirty(f"temp files changed: {sorted(now ^ BASELINE)[:5]}")
    if any(_ipc_entries().values()):
        raise SandboxDirty("System V IPC objects left")


def _serve_one(sock: socket.socket, own_users: bool) -> bool:
    """Fork one child for the next request and clean up after it; False when the arena
    has gone. (Per child state lives in this frame only: it is gone with the call.)"""
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE_BYTES, 1)
    except ConnectionResetError:
        return False
    if not data:
        return False
    request = json.loads(data)
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise SandboxDirty("a request without its output descriptor")
    uid = int(request["uid"]) if own_users else None
    spare = int(request["spare_uid"]) if own_users else None
    pid = os.fork()
    if pid == 0:
        _child(sock, fds[0], request["argv"], request["env"], uid)
    os.close(fds[0])
    _send(sock, started=pid)
    code = _wait(pid)
    _clean_as(uid, spare)
    _check_clean()
    _send(sock, exited=code)
    return True


def serve(sock: socket.socket) -> int:
    """Fork a child for each request until the arena closes the socket; exit (and so
    end the sandbox) if anything of a child survives its clean-up."""
    _set_dumpable(False)
    BASELINE.update(_temp_entries())
    own_users = can_switch_users()
    _send(sock, ready=os.getpid(), own_users=own_users)
    try:
        while _serve_one(sock, own_users):
            pass
    except SandboxDirty as dirty:
        print(f"fork server: {dirty}; this sandbox ends", file=sys.stderr)
        return 3
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -I -m cfarena.sdk.forkserver [--preload MODULE]...`: MODULEs (the
    arena's own bundled bots, never an entrant's code) are imported up front too."""
    args = list(sys.argv[1:] if argv is None else argv)
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
    while args[:1] == ["--preload"] and len(args) >= 2:
        importlib.import_module(args[1])
        del args[:2]
    if args:
        print(f"fork server: unknown arguments {args}", file=sys.stderr)
        return 2
    # what start-up made (the runtime and the preloaded bots, as long-lived as the
    # server) goes out of the collector's sight, and the collector back on: every child
    # starts with it on, as any program does, and neither its collections nor the
    # server's walk (and so copy, page by page, into each child) that frozen heap
    sdk_cli.collect_from_now()
    with socket.socket(fileno=fd) as sock:
        return serve(sock)


if __name__ == "__main__":
    raise SystemExit(main())
