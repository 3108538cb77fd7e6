"""The cgroup of a sandbox on this machine's real /sys/fs/cgroup: made with its limits,
joined before the command runs, read, and removed; and the watchdog outliving a
referee that is out of descriptors.

These need root and cgroup v1's memory, pids and cpuacct controllers (as on the
project's machines and CI); elsewhere they fail and say so.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cfarena.server.sandbox import (
    BotProcess,
    LimitWatch,
    SandboxLimits,
    cgroups,
    keeper,
    python_paths,
)

MIB = 1024 * 1024


@pytest.fixture(autouse=True)
def _needs_cgroups() -> None:
    if not all(cgroups.defences().values()):
        pytest.fail(f"no cgroups for sandboxes here: {cgroups.available()}", pytrace=False)


def test_a_sandbox_cgroup_is_made_limited_read_and_removed() -> None:
    group = cgroups.create(64 * MIB, tasks=8)
    assert group is not None
    dirs = dict(group.dirs)
    try:
        # below this referee's own parent, named by its PID and start time
        me = f"cfarena-{os.getpid()}-{keeper.start_time(os.getpid())}-{cgroups._pid_namespace()}"
        assert {d.parent.name for d in dirs.values()} == {me}
        mem = group.dirs["memory"]
        hard = 64 * MIB + cgroups.headroom(64 * MIB)
        assert int((mem / "memory.limit_in_bytes").read_text()) == hard
        assert "oom_kill_disable 1" in (mem / "memory.oom_control").read_text()
        assert (group.dirs["pids"] / "pids.max").read_text().strip() == "8"
        # a command joins before it runs: anonymous memory, a full pipe (kernel memory),
        # CPU time in a child, and forks refused at pids.max all show
        script = r"""
import os, time
held = bytearray(24 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1
r, w = os.pipe()
os.set_blocking(w, False)
try:
    while True:
        os.write(w, b"x" * 65536)
except BlockingIOError:
    pass
if os.fork() == 0:
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    os._exit(0)
os.wait()
refused = 0
children = []
for _ in range(10):
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
print(len(children), refused, flush=True)
time.sleep(30)
"""
        proc = subprocess.Popen([*group.join_prefix(), sys.executable, "-c", script],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            started, refused = map(int, proc.stdout.readline().split())
            assert started == 7 and refused == 3  # 8 tasks: the command and 7 children
            assert group.tasks() == 8 and group.forks_refused() == 3
            assert group.memory_in_use() > 24 * MIB
            assert group.cpu_ns() > 300_000_000
            assert not group.remove()  # processes are in it: it stays
        finally:
            for pid in (group.dirs["pids"] / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
            proc.wait()
        deadline = time.monotonic() + 5
        while not group.remove() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group.dirs == {}
        assert not any(d.exists() for d in dirs.values())
    finally:
        group.remove()


def test_the_leftovers_of_a_referee_that_is_gone_are_removed() -> None:
    group = cgroups.create(MIB, 1)
    assert group is not None
    ours = {d.parent for d in group.dirs.values()}
    assert group.remove()
    # a process left in a sandbox of a referee that is gone (its keeper gone too)
    left = subprocess.Popen(["sleep", "60"])
    try:
        for parent in ours:
            own = parent.parent  # the referee's own cgroup in this controller
            ns = cgroups._pid_namespace()
            gone = own / f"cfarena-999999999-1-{ns}"  # no process has this PID
            reused = own / f"cfarena-{os.getpid()}-1-{ns}"  # our PID, another start time
            elsewhere = own / "cfarena-999999999-1-1"  # another PID namespace's referee
            for stale in (gone, reused, elsewhere):
                (stale / "sandbox-1").mkdir(parents=True)
            (gone / "sandbox-1" / "cgroup.procs").write_text(str(left.pid))
        for parent in ours:
            own = parent.parent
            cgroups._remove_stale(own)
            assert not (own / f"cfarena-999999999-1-{ns}").exists()
            assert not (own / f"cfarena-{os.getpid()}-1-{ns}").exists()
            assert parent.exists()  # ours: this referee runs
            elsewhere = own / "cfarena-999999999-1-1"
            assert elsewhere.exists()  # not ours to judge: left alone
            (elsewhere / "sandbox-1").rmdir()
            elsewhere.rmdir()
        assert left.wait(timeout=5) == -signal.SIGKILL
    finally:
        left.kill()
        left.wait()


def test_without_cgroups_the_run_says_so() -> None:
    code = ("from cfarena.server.sandbox import cgroups; "
            "print(cgroups.available()); print(cgroups.defences())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "CFARENA_CGROUPS": "off"}, check=True).stdout
    assert out.splitlines() == [
        "kernel limits: none (turned off by CFARENA_CGROUPS); the /proc watchdog counts alone",
        "{'memory_cgroup': False, 'pids_cgroup': False, 'cpu_cgroup': False}"]
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout
    assert here.splitlines()[0] == ("kernel limits: memory cgroup, pids cgroup, cpuacct "
                                    "cgroup per sandbox (cgroup v1)")


SPIN = "while True: pass"


@pytest.mark.parametrize("with_cgroups", [True, False])
def test_the_watchdog_outlives_a_referee_out_of_descriptors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_cgroups: bool) -> None:
    """While the referee cannot open a file (EMFILE) its polls learn nothing; the watch
    goes on, and stops a CPU spinner once the referee has descriptors again. The
    stopped sandbox's cgroups are gone."""
    if not with_cgroups:
        monkeypatch.setattr(cgroups, "_support", lambda: cgroups.Support({}, "test"))

    async def run() -> BotProcess:
        proc = BotProcess("spin", [sys.executable, "-c", SPIN], {"PATH": "/usr/bin:/bin"},
                          binds=python_paths(), limits=SandboxLimits(cpu_seconds=1),
                          workdir=tmp_path)
        watch = LimitWatch()
        await proc.start()
        assert (proc.cgroup is not None) is with_cgroups
        dirs = list(proc.cgroup.dirs.values()) if proc.cgroup is not None else []
        watch.watch(proc)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        held: list[int] = []
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 64,
                                                         hard))
            while True:
                try:
                    held.append(os.open("/dev/null", os.O_RDONLY))
                except OSError:
                    break
            await asyncio.sleep(2.0)  # the spinner passes its limit meanwhile
            assert proc.breach is None  # nothing could be read
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            assert proc.proc is not None
            await asyncio.wait_for(proc.proc.wait(), 5)
        finally:
            await proc.stop()
            await watch.close()
        assert proc.cgroup is None and not any(d.exists() for d in dirs)  # removed
        return proc

    proc = asyncio.run(run())
    assert proc.breach == "CPU time limit 1 s exceeded"


def test_the_keeper_of_a_referee_that_ended_normally_ends_with_it() -> None:
    code = ("from cfarena.server.sandbox import cgroups; cgroups.available(); "
            "print(cgroups._keepers[0].pid, *cgroups._support().parents.values())")
    keeper_pid, *parents = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                          text=True, check=True).stdout.split()
    # the referee has exited: its keeper finds nothing to kill, and ends
    deadline = time.monotonic() + 5
    while keeper.start_time(int(keeper_pid)) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert time.monotonic() < deadline, "the keeper outlived its referee by 5 s"
    assert not any(Path(parent).exists() for parent in parents)
