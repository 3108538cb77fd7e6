"""Where the suite's time goes: an opt-in pytest plugin (tests/conftest.py registers it
when `CFARENA_TEST_USAGE` names a file) that records, per test, its wall time, the
CPU time of the whole machine meanwhile (/proc/stat: what the test's sandboxed bots,
PostgreSQL servers and `cfarena` processes used too, which the pytest process's own
rusage misses) and the CPU time of the pytest process and its reaped children; then
writes the tests and their files sorted by machine CPU and by wall time.

    CFARENA_TEST_USAGE=usage.txt pytest -p no:randomly

A test's figures include its fixtures' setup and teardown (a module's fixture counts
in the test that set it up). The machine's CPU includes whatever else runs on it:
run it on a quiet machine, or read it beside the load averages the file records. On
pytest-xdist workers each worker writes its own file (`usage.txt.gw0`, ...), and the
machine's CPU of tests that overlap is counted in each of them.
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ENV = "CFARENA_TEST_USAGE"
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_IDLE_FIELDS = (3, 4)  # idle, iowait (of: user nice system idle iowait irq softirq steal)
TOP = 30


def machine_cpu_s() -> float:
    """CPU seconds the machine's cores have been busy since boot (all processes)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    return sum(int(v) for i, v in enumerate(fields) if i not in _IDLE_FIELDS) * _TICK_S


def own_cpu_s() -> float:
    """CPU seconds of this process and of its children that it has waited for."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def load_1min() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


@dataclass(frozen=True)
class Spent:
    nodeid: str
    wall_s: float
    machine_cpu_s: float
    own_cpu_s: float
    load: float  # the 1-minute load average when the test ended

    @property
    def file(self) -> str:
        return self.nodeid.split("::", 1)[0]


class UsageRecorder:
    """The plugin: measures each test's run protocol, writes `path` at the session's end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tests: list[Spent] = []
        self._started = (time.monotonic(), machine_cpu_s(), own_cpu_s(), load_1min())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        wall, machine, own = time.monotonic(), machine_cpu_s(), own_cpu_s()
        yield
        self.tests.append(Spent(item.nodeid, time.monotonic() - wall,
                                    machine_cpu_s() - machine, own_cpu_s() - own, load_1min()))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        path = self.path.with_name(f"{self.path.name}.{worker}") if worker else self.path
        path.write_text(self.report())

    def report(self) -> str:
        wall0, machine0, own0, load0 = self._started
        wall, machine = time.monotonic() - wall0, machine_cpu_s() - machine0
        loads = [t.load for t in self.tests] or [load0]
        lines = [f"{len(self.tests)} tests in {wall:.0f} s wall; machine CPU {machine:.0f} s "
                 f"({machine / max(wall, 1e-9):.2f} cores busy on average, of "
                 f"{os.cpu_count()}); pytest process and reaped children "
                 f"{own_cpu_s() - own0:.0f} s",
                 f"1-minute load average: {load0:.1f} at the start, mean "
                 f"{sum(loads) / len(loads):.1f} and max {max(loads):.1f} at the tests' ends",
                 ""]
        files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
        for test in self.tests:
            row = files[test.file]
            row[0] += 1
            row[1] += test.wall_s
            row[2] += test.machine_cpu_s
            row[3] += test.own_cpu_s
        header = f"{'wall s':>8} {'cpu s':>8} {'own s':>8}"
        for key, title in ((2, "machine CPU"), (1, "wall time")):
            lines += [f"files by {title}:", f"{header} {'tests':>5}  file"]
            lines += [f"{r[1]:8.1f} {r[2]:8.1f} {r[3]:8.1f} {int(r[0]):5d}  {name}"
                      for name, r in sorted(files.items(), key=lambda f: -f[1][key])]
            lines.append("")
        for attr, title in (("machine_cpu_s", "machine CPU"), ("wall_s", "wall time")):
            lines += [f"top {TOP} tests by {title}:", f"{header}  test"]
            lines += [f"{t.wall_s:8.1f} {t.machine_cpu_s:8.1f} {t.own_cpu_s:8.1f}  {t.nodeid}"
                      for t in sorted(self.tests, key=lambda t: -getattr(t, attr))[:TOP]]
            lines.append("")
        return "\n".join(lines)
