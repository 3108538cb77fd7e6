"""Where the suite's time goes: an opt-in pytest plugin (tests/conftest.py registers it
when `CFARENA_TEST_USAGE` names a file) that records, per test, its wall time, the
CPU time of the whole machine meanwhile (/proc/stat: what the test's sandboxed bots,
PostgreSQL servers and `cfarena` processes used too, which the pytest process's own
rusage misses) and the CPU time of the pytest process and its reaped children. Each
test's row is appended to FILE.rows as it ends (an interrupted run keeps what it
measured); at the end FILE gets the tests and their files sorted by machine CPU and by
wall time.

    CFARENA_TEST_USAGE=usage.txt pytest
    python -m tests.harness.usage usage.txt.rows [MORE.rows]   # the tables of rows

A test's figures include its fixtures' setup and teardown (a module's fixture counts
in the test that set it up). The machine's CPU includes whatever else runs on it:
run it on a quiet machine, or read it beside the load averages the file records. On
pytest-xdist workers each worker writes its own files (`usage.txt.gw0`, ...), and the
machine's CPU of tests that overlap is counted in each of them (the own CPU is not).
"""

from __future__ import annotations

import os
import resource
import sys
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
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.path = path.with_name(f"{path.name}.{worker}") if worker else path
        self.rows = self.path.with_name(self.path.name + ".rows")
        self.rows.write_text("")
        self.tests: list[Spent] = []
        self._started = (time.monotonic(), machine_cpu_s(), own_cpu_s(), load_1min())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        wall, machine, own = time.monotonic(), machine_cpu_s(), own_cpu_s()
        yield
        spent = Spent(item.nodeid, time.monotonic() - wall, machine_cpu_s() - machine,
                      own_cpu_s() - own, load_1min())
        self.tests.append(spent)
        with self.rows.open("a") as rows:
            rows.write(f"{spent.wall_s:.3f}\t{spent.machine_cpu_s:.3f}\t{spent.own_cpu_s:.3f}"
                       f"\t{spent.load:.2f}\t{spent.nodeid}\n")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        wall0, machine0, own0, load0 = self._started
        wall, machine = time.monotonic() - wall0, machine_cpu_s() - machine0
        self.path.write_text(
            f"{len(self.tests)} tests in {wall:.0f} s wall; machine CPU {machine:.0f} s "
            f"({machine / max(wall, 1e-9):.2f} cores busy on average, of {os.cpu_count()}); "
            f"pytest process and reaped children {own_cpu_s() - own0:.0f} s; 1-minute load "
            f"average {load0:.1f} at the start\n" + report(self.tests))


def read_rows(path: Path) -> list[Spent]:
    """The tests of a FILE.rows file."""
    spent = []
    for line in path.read_text().splitlines():
        wall, machine, own, load, nodeid = line.split("\t", 4)
        spent.append(Spent(nodeid, float(wall), float(machine), float(own), float(load)))
    return spent


def report(tests: list[Spent]) -> str:
    """The tests' files, then the top tests, by machine CPU and by wall time."""
    loads = [t.load for t in tests] or [0.0]
    lines = [f"{len(tests)} tests: wall {sum(t.wall_s for t in tests):.0f} s, machine CPU "
             f"{sum(t.machine_cpu_s for t in tests):.0f} s, own CPU "
             f"{sum(t.own_cpu_s for t in tests):.0f} s; 1-minute load average at the tests' "
             f"ends: mean {sum(loads) / len(loads):.1f}, max {max(loads):.1f}", ""]
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for test in tests:
        row = files[test.file]
        row[0] += 1
        row[1] += test.wall_s
        row[2] += test.machine_cpu_s
        row[3] += test.own_cpu_s
    header = f"{'wall s':>8} {'cpu s':>8} {'own s':>8}"
    for key, title in ((2, "machine CPU"), (3, "own CPU"), (1, "wall time")):
        lines += [f"files by {title}:", f"{header} {'tests':>5}  file"]
        lines += [f"{r[1]:8.1f} {r[2]:8.1f} {r[3]:8.1f} {int(r[0]):5d}  {name}"
                  for name, r in sorted(files.items(), key=lambda f: -f[1][key])]
        lines.append("")
    for attr, title in (("machine_cpu_s", "machine CPU"), ("own_cpu_s", "own CPU"),
                        ("wall_s", "wall time")):
        lines += [f"top {TOP} tests by {title}:", f"{header}  test"]
        lines += [f"{t.wall_s:8.1f} {t.machine_cpu_s:8.1f} {t.own_cpu_s:8.1f}  {t.nodeid}"
                  for t in sorted(tests, key=lambda t: -getattr(t, attr))[:TOP]]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report([t for name in sys.argv[1:] for t in read_rows(Path(name))]))
