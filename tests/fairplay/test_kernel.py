"""Routes through the kernel, tried from inside a real sandbox (`BotProcess`, as the pool
starts it): the keyring (keys outlive a process and other sandboxes can list them), new
namespaces (a nested PID namespace hides processes from the limit watchdog), memfd
(memory no process maps), children reaped unseen (SIGCHLD ignored: their CPU time
reaches no parent), and what PID 1's command line tells.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from cfarena.server.sandbox import BotProcess, LimitWatch, SandboxLimits, python_paths

PROBES = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)

def call(name, *args):
    number = {"add_key": 248, "keyctl": 250, "unshare": 272, "memfd_create": 319}[name]
    result = libc.syscall(number, *args)
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]

print("add_key", call("add_key", b"user", b"hand", b"4-9 2-2", 7, -4))  # KEY_SPEC_USER_KEYRING
print("keyctl", call("keyctl", 0, -4, 0))  # KEYCTL_GET_KEYRING_ID
print("unshare", call("unshare", 0x10000000))  # CLONE_NEWUSER
print("memfd_create", call("memfd_create", b"x", 0))
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("fork", "ok")
print("cmdline", open("/proc/1/cmdline", "rb").read().split(b"\0-c\0")[0].replace(b"\0", b" ")
      .decode())
print("shm", os.access("/dev/shm", os.W_OK))
"""

# children burn CPU and are reaped by the kernel (SIGCHLD ignored), never by the parent;
# 0.1 s each, one every 0.1 s: those alive at once hold a small part of the test's 1 s
# limit (ten would have to overlap), so only the reaped children's CPU reaches it
HIDDEN_CPU = r"""
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
print("spinning", flush=True)
while True:
    if os.fork() == 0:
        end = time.process_time() + 0.1
        while time.process_time() < end:
            pass
        os._exit(0)
    time.sleep(0.1)
"""


async def _run(tmp: Path, script: str, limits: SandboxLimits, seconds: float) -> BotProcess:
    proc = BotProcess("probe", [sys.executable, "-c", script], {"PATH": "/usr/bin:/bin"},
                      binds=python_paths(), limits=limits, workdir=tmp)
    watch = LimitWatch()
    await proc.start()
    watch.watch(proc)
    try:
        assert proc.proc is not None
        await asyncio.wait_for(proc.proc.wait(), seconds)
    except TimeoutError:
        pass
    finally:
        await proc.stop()
        await watch.close()
    return proc


def _lines(proc: BotProcess) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in proc.output.text().splitlines() if " " in line)


def test_keyring_namespaces_and_memfd_are_closed(tmp_path: Path) -> None:
    proc = asyncio.run(_run(tmp_path, PROBES, SandboxLimits(), 30))
    seen = _lines(proc)
    assert seen["add_key"] == "EPERM" and seen["keyctl"] == "EPERM", proc.output.text()
    assert seen["unshare"] == "EPERM"
    assert seen["memfd_create"] == "ENOSYS"
    assert seen["fork"] == "ok"  # ordinary processes still work
    assert seen["shm"] == "True"  # a private /dev/shm, for multiprocessing
    # PID 1 (bwrap's init) shows the bot's own command, not what the sandbox binds
    assert seen["cmdline"].startswith("bwrap --args "), seen["cmdline"]
    assert "--ro-bind" not in seen["cmdline"] and str(tmp_path) not in seen["cmdline"]


def test_cpu_of_children_reaped_unseen_still_counts(tmp_path: Path) -> None:
    limits = SandboxLimits(cpu_seconds=1)
    proc = asyncio.run(_run(tmp_path, HIDDEN_CPU, limits, 20))
    assert "spinning" in proc.output.text()
    assert proc.breach == "CPU time limit 1 s exceeded"
