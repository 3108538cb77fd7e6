"""The host's activity counters are hidden from a sandbox (sandbox/host_counters.py).

A bot in a real sandbox moves host-wide counters on purpose (forks, page faults,
`mlock`) and reads every counter file of /proc before and after: it must read the
static stand-in each time, while the host's own files moved; and it cannot lock
memory at all (each `mlock` of k pages would add k to a counter of the whole host,
which no page-cache reset clears: a hostile review carried 12 bits across one).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from cfarena.server.sandbox import BotProcess, SandboxLimits, python_paths
from cfarena.server.sandbox.host_counters import COUNTER_DIRS, COUNTER_FILES, stand_in

PROBE = r"""
import ctypes, json, mmap, os, sys
names, dirs = json.loads(sys.argv[1])

def read_all():
    seen = {}
    for name in names:
        try:
            with open(f"/proc/{name}") as f:
                seen[name] = f.read()
        except OSError as exc:
            seen[name] = f"error {exc.errno}"
    for name in dirs:
        try:
            seen[name] = sorted(os.listdir(f"/proc/{name}"))
        except OSError as exc:
            seen[name] = f"error {exc.errno}"
    return seen

before = read_all()
for _ in range(200):  # forks: /proc/stat's "processes", page faults: /proc/vmstat
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
libc = ctypes.CDLL(None, use_errno=True)
buf = mmap.mmap(-1, 1 << 20)
address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
locked = libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(1 << 20))
print(json.dumps({"before": before, "after": read_all(),
                  "mlock": locked, "errno": ctypes.get_errno()}))
"""


def test_a_sandbox_reads_static_stand_ins_for_the_hosts_counters(tmp_path: Path) -> None:
    names = [n for n in COUNTER_FILES if Path(f"/proc/{n}").exists()]
    dirs = [n for n in COUNTER_DIRS if Path(f"/proc/{n}").exists()]
    host_before = Path("/proc/stat").read_text()

    async def run() -> str:
        proc = BotProcess("probe", [sys.executable, "-c", PROBE, json.dumps([names, dirs])],
                          {"PATH": "/usr/bin:/bin"}, binds=python_paths(),
                          limits=SandboxLimits(), workdir=tmp_path)
        await proc.start()
        try:
            await asyncio.wait_for(proc.wait(), 60)
        finally:
            await proc.stop()
        return proc.output.text()

    out = asyncio.run(run())
    report = json.loads(out.strip().splitlines()[-1])
    assert Path("/proc/stat").read_text() != host_before  # the host's own moved
    for name in names:
        assert report["before"][name] == stand_in(name), name
        assert report["after"][name] == stand_in(name), name
    for name in dirs:
        assert report["before"][name] == report["after"][name] == [], name
    assert "processes 0" in report["after"]["stat"]
    assert report["mlock"] == -1 and report["errno"] in (1, 12)  # EPERM or ENOMEM
