"""The sandboxed bot processes of one run, told apart from other runs' on this machine.

A sandbox is a `bwrap` with its own PID namespace. bwrap (as root, outside) and the
namespace's init (bwrap again, PID 1 inside) keep the working directory of the
process that started them: the run's own directory. The bot's processes run as a
sandbox uid (`SANDBOX_UID_MIN` and above) and may change directory, but not leave
their PID namespace. So a run's sandboxed processes are those with a sandbox uid
that either work below the run's directory or share the PID namespace of an init
that does. Scans of the whole machine would also see the sandboxes of tests running
alongside (pytest-xdist workers, other runs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cfarena.server.sandbox.bubblewrap import SANDBOX_UID_MIN
from tests.harness.host_processes import proc_entries

__all__ = ["SANDBOX_UID_MIN", "SandboxProcess", "run_sandboxes", "wait_run_sandboxes_gone"]


@dataclass(frozen=True)
class SandboxProcess:
    """A live process of a sandbox, as the host sees it."""

    pid: int
    uid: int
    state: str  # one letter of /proc/PID/stat: R, S, Z, ...
    cwd: str
    namespace: str  # its PID namespace, "pid:[inode]"
    init: bool  # PID 1 of its namespace (bwrap's init)
    argv: str

    def __str__(self) -> str:
        return f"pid {self.pid} uid {self.uid} state {self.state}: {self.argv[:200]}"


def _processes() -> Iterator[SandboxProcess]:
    for entry in proc_entries():
        try:
            status = (entry / "status").read_text()
            stat = (entry / "stat").read_text()
            cwd = os.readlink(entry / "cwd")
            namespace = os.readlink(entry / "ns" / "pid")
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = int(fields["Uid"].split()[0])
        nspid = fields.get("NSpid", "").split()
        yield SandboxProcess(pid=int(entry.name), uid=uid,
                             state=stat.rsplit(")", 1)[1].split()[0], cwd=cwd,
                             namespace=namespace, init=len(nspid) > 1 and nspid[-1] == "1",
                             argv=argv)


def _below(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root).rstrip("/") + "/")


def run_sandboxes(root: Path, zombies: bool = True) -> list[SandboxProcess]:
    """Live processes with a sandbox uid of the run(s) working in `root` or below it
    (zombies too, unless `zombies=False`)."""
    everything = list(_processes())
    namespaces = {p.namespace for p in everything if p.init and _below(p.cwd, root)}
    return [p for p in everything
            if p.uid >= SANDBOX_UID_MIN and (zombies or p.state != "Z")
            and (p.namespace in namespaces or _below(p.cwd, root))]


def wait_run_sandboxes_gone(root: Path, timeout: float, zombies: bool = True
                            ) -> list[SandboxProcess]:
    """Wait until no sandboxed process of the run in `root` is alive; those left."""
    deadline = time.monotonic() + timeout
    while True:
        left = run_sandboxes(root, zombies)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
