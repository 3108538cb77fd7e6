"""Real tournaments with hostile bots, run through the real CLI, for tests/fairplay.

Each scenario is one tiny `cfarena run-tournament` (a hostile bot `evil`
against the bundled `random`, 2 players, 1 game of one round: the two rotations
of one deal; every attack starts at the bot's start, its match's start or its
first Turn; a few play more games or seat two hostile bots, and "environment" runs
with secrets in the organiser's environment) in its own directory, with the database
(`cfarena.db`) and `--log-dir logs` there: the referee's working directory,
the first place an attacker looks. The bots print `PROBE <name>: <json>`
lines; the referee stores each seat's output, which `Outcome` reads back
from the database with the matches, their faults and game logs.

The session's `Arena` starts every scenario the selected tests need at once
(a few at a time), so the whole suite costs about as much as its slowest
tournaments; a test waits only for its own. The page-cache scenarios are played
first, one at a time and alone (their runs claim the host reset, which holds only
for a process that plays alone on the host; their module is marked `host_alone`,
which keeps the run's other tests away: tests/conftest.py). The check that no sandboxed process
is left (of the scenarios' runs: `tests.harness.sandboxes`) waits for every
scenario to end.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfarena.server.sandbox.host_reset import OFF_ENV
from cfarena.server.storage import open_database
from cfarena.server.storage.values import FaultInfo, MatchDetail, MatchInfo, SeatLog
from tests.cli.helpers import marker, processes_with_marker, run_cli
from tests.fairplay.bots.page_cache import usr_file
from tests.harness.host_processes import proc_entries
from tests.harness.sandboxes import run_sandboxes

BOTS = Path(__file__).resolve().parent / "bots"
PARALLEL = 5  # tournaments at once
RUN_TIMEOUT = 240.0
# secrets in the organiser's environment (scenario "environment"): no bot may see them
ORGANISER_CANARY = f"canary-{secrets.token_hex(8)}"
DB_PASSWORD = f"SECRET{secrets.token_hex(8)}"
# (a bundled bot's setting too: it reaches only that bundled bot, never these)
ORGANISER_ENV = (("CFARENA_TEST_CANARY", ORGANISER_CANARY),
                 ("CFARENA_DB", f"postgresql://u:{DB_PASSWORD}@db.invalid:5432/cfarena"),
                 ("CFARENA_MC_BUDGET_MS", "7"))


def bot(name: str, file: str, *args: str) -> str:
    """A `--bot` value: NAME=python -m cfarena.sdk run <abs path of a hostile bot> ARGS."""
    return f"{name}=" + shlex.join(["python", "-m", "cfarena.sdk", "run", str(BOTS / file),
                                    *args])


@dataclass(frozen=True)
class Scenario:
    name: str
    bots: tuple[str, ...]
    options: tuple[str, ...] = ()
    hostile: tuple[str, ...] = ("evil",)  # bot names whose seats attack
    timeout_ms: int = 20000  # generous: only the attack under test should fault
    games: int = 1  # deals; each is played in both rotations
    rounds: int = 1  # per match: an attack needs no more (see the module docstring)
    env: tuple[tuple[str, str], ...] = ()  # added to the organiser's environment
    # files whose pages are evicted from the host's page cache before the run (a
    # page-cache carrier needs a region nobody has read)
    evict: tuple[str, ...] = ()


def scenarios(port: int, mark: str, blob: Path) -> dict[str, Scenario]:
    """Every scenario, by name. `port` is the test's TCP listener; `mark` the daemon marker;
    `blob` the large file the page-cache carrier ships with."""
    def evil(file: str, *args: str, options: tuple[str, ...] = (), timeout_ms: int = 20000,
             name: str | None = None, games: int = 1,
             env: tuple[tuple[str, str], ...] = (), evict: tuple[str, ...] = ()
             ) -> Scenario:
        return Scenario(name or file.removesuffix(".py"), (bot("evil", file, *args), "random"),
                        options, timeout_ms=timeout_ms, games=games, env=env, evict=evict)

    found = [
        evil("snoop_proc.py"),
        evil("hunt_files.py", options=("--connect-timeout", "150")),
        evil("steal_seat.py", options=("--connect-timeout", "90")),
        evil("network.py", "--name", f"fairplay-port-{port}"),
        evil("fork_bomb.py", options=("--max-processes", "32")),
        evil("memory_hog.py", options=("--memory-mb", "256")),
        evil("socket_hog.py", options=("--memory-mb", "64")),
        evil("memory_pair.py", options=("--memory-mb", "256")),
        # the same where the kernel does not count (no cgroups): the /proc watchdog alone
        evil("memory_pair.py", options=("--memory-mb", "256"), name="memory_pair_proc",
             env=(("CFARENA_CGROUPS", "off"),)),
        evil("short_children.py", options=("--cpu-seconds", "1"), timeout_ms=120000),
        evil("descriptor_hog.py"),
        evil("output_flood.py"),
        evil("daemon.py", "--name", mark),
        evil("rotation_spy.py"),
        # more matches, for more MatchEnds to inspect: the referee does not always
        # deliver one before it stops the bot's process
        evil("rotation_spy.py", name="match_end", games=3),
        # 1 s: four spinners reach it long before one reaches RLIMIT_CPU (6 s), and each
        # match's bot burns no more than the limit (the suite's CPU)
        evil("cpu_spinner.py", options=("--cpu-seconds", "1"), timeout_ms=120000),
        evil("cpu_spinner.py", "--name", "orphans", options=("--cpu-seconds", "1"),
             timeout_ms=120000, name="cpu_orphans"),
        # 5 deals x 2 rotations: the fork servers fork several children in turn (with 3,
        # the taint rule once gave every child a server of its own)
        evil("stash.py", games=5),
        # a forked SDK bot and a fresh process (a script on the arena's Python, not forked)
        Scenario("environment", (bot("forked", "env_report.py"), "fresh=" + shlex.join(
            [sys.executable, str(BOTS / "env_report.py")])), hostile=("forked", "fresh"),
            env=ORGANISER_ENV),
        evil("flood.py"),
        # its hand in the page cache of its own file, or of a library under /usr
        evil("page_cache.py", f"--name={blob}", evict=(str(blob),)),
        evil("page_cache.py", "--name=usr", name="page_cache_usr", evict=(str(usr_file()),)),
        Scenario("control", (bot("snoop", "snoop_proc.py"), bot("hunt", "hunt_files.py")),
                 ("--no-sandbox",), hostile=("snoop", "hunt")),
    ]
    return {s.name: s for s in found}


def write_blob(path: Path, mib: int = 32) -> None:
    """A large file of random bytes, on disk and out of the page cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        for _ in range(mib):
            out.write(os.urandom(1 << 20))
        out.flush()
        os.fsync(out.fileno())
    evict(path)


def evict(path: Path) -> None:
    """Drop a file's clean pages from the page cache (those no process maps)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ outcomes
def parse_probes(text: str) -> list[tuple[str, Any]]:
    """The `PROBE <name>: <json>` lines of a seat's output, in order."""
    found: list[tuple[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("PROBE "):
            continue
        name, _, rest = line[len("PROBE "):].partition(": ")
        try:
            found.append((name, json.loads(rest)))
        except ValueError:
            found.append((name, rest))
    return found


@dataclass
class Seat:
    """One seat of one stored match: the bot, its captured output and its probes."""

    match: MatchInfo
    detail: MatchDetail
    seat: int
    bot: str
    log: SeatLog | None

    @property
    def probes(self) -> list[tuple[str, Any]]:
        return parse_probes(self.log.output) if self.log else []

    def all(self, name: str, **where: Any) -> list[Any]:
        """Every outcome of probe `name` (dict outcomes filtered by `where`)."""
        return [out for n, out in self.probes if n == name and all(
            isinstance(out, dict) and out.get(k) == v for k, v in where.items())]

    def one(self, name: str, **where: Any) -> Any:
        found = self.all(name, **where)
        assert found, (f"seat {self.seat} ({self.bot}) of {self.match.key} printed no probe "
                       f"{name!r} {where or ''}; output:\n{self.output_tail()}")
        return found[0]

    @property
    def faults(self) -> list[FaultInfo]:
        return [f for f in self.detail.faults if f.seat == self.seat]

    def output_tail(self, chars: int = 3000) -> str:
        return self.log.output[-chars:] if self.log else "(no stored output)"


@dataclass
class Outcome:
    """What one scenario's tournament did: the CLI's result and everything stored."""

    scenario: Scenario
    tmp: Path
    db_path: Path
    log_dir: Path
    mark: str
    result: subprocess.CompletedProcess[str]
    wall_s: float
    matches: list[MatchInfo] = field(default_factory=list)  # by start time
    details: dict[str, MatchDetail] = field(default_factory=dict)
    logs: dict[str, list[SeatLog]] = field(default_factory=dict)
    game_logs: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    load_error: str | None = None

    def seats(self, bot_name: str) -> list[Seat]:
        """The seats `bot_name` held, in the order their matches started."""
        out = []
        for m in self.matches:
            logs = {log.seat: log for log in self.logs.get(m.id, [])}
            out += [Seat(m, self.details[m.id], s.seat, s.bot_name, logs.get(s.seat))
                    for s in m.seats if s.bot_name == bot_name]
        return out

    def describe(self) -> str:
        return (f"scenario {self.scenario.name}: exit {self.result.returncode}, "
                f"{self.wall_s:.1f} s\nstderr (tail):\n{self.result.stderr[-2500:]}")


_LOADING = threading.Lock()  # open_database runs alembic, whose context is process-global


def load(outcome: Outcome) -> None:
    if not outcome.db_path.exists():
        outcome.load_error = "no database"
        return
    with _LOADING:
        db = open_database(f"sqlite:///{outcome.db_path}")
    try:
        matches = db.list_matches(limit=None)
        outcome.matches = sorted(
            matches, key=lambda m: (m.started_at is None, m.started_at or m.created_at))
        for m in matches:
            detail = db.get_match(m.id)
            assert detail is not None
            outcome.details[m.id] = detail
            outcome.logs[m.id] = db.seat_logs(m.id)
            outcome.game_logs[m.id] = db.get_log(m.id)
    finally:
        db.close()


# ----------------------------------------------------------- the machine
def cmdline_processes(text: str) -> list[str]:
    """Live processes whose command line contains `text`, described."""
    needle = text.encode()
    found = []
    for entry in proc_entries():
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes()
            if needle in argv and entry.name != str(os.getpid()):
                shown = argv.replace(b"\0", b" ")[:200].decode(errors="replace")
                found.append(f"pid {entry.name}: {shown}")
    return found


@dataclass
class DaemonSighting:
    nonce: str
    phase: str
    first_seen: float
    last_seen: float  # start time of the last scan that saw it alive


class DaemonWatch:
    """Samples the machine for the daemon bot's daemons (argv: python -c CODE MARK NONCE PHASE)."""

    def __init__(self, mark: str) -> None:
        self.mark = mark.encode()
        self.seen: dict[int, DaemonSighting] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.scan()
            time.sleep(0.05)

    def scan(self) -> None:
        now = time.time()
        for entry in proc_entries():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(argv) < 6 or argv[1] != b"-c" or argv[3] != self.mark:
                continue
            pid = int(entry.name)
            sighting = self.seen.get(pid)
            if sighting is None:
                self.seen[pid] = DaemonSighting(argv[4].decode(), argv[5].decode(), now, now)
            else:
                sighting.last_seen = now


class Arena:
    """Runs the scenarios the selected tests need, several at once (see the module docstring)."""

    def __init__(self, base: Path, wanted: Iterable[str]) -> None:
        self.base = base
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        port = self.listener.getsockname()[1]
        self.daemon_mark = "fairplay-mark-" + marker().rsplit("-", 1)[1]
        self.daemon_watch = DaemonWatch(self.daemon_mark)
        self.blob = base / "carrier" / "blob.bin"
        self.all = scenarios(port, self.daemon_mark, self.blob)
        unknown = set(wanted) - set(self.all)
        assert not unknown, f"unknown scenarios {unknown}"
        if "page_cache" in wanted:
            write_blob(self.blob)
        # the slow ones first (their bots walk the visible filesystem, or burn their
        # CPU limit, in both matches): the others fill the slots beside them
        order = ["hunt_files", "steal_seat", "cpu_spinner", "cpu_orphans", "short_children"]
        chosen = sorted(set(wanted), key=lambda n: (order.index(n) if n in order else 99, n))
        self._pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="fairplay")
        self._futures: dict[str, Future[Outcome]] = {}
        # the page-cache scenarios first, one at a time, before anything else starts: a
        # run claims the host reset only while no other cfarena process plays on the
        # host (host_reset.HostReset.claim), and their tests check that it holds
        for name in [n for n in chosen if self.all[n].evict]:
            self._futures[name] = Future()
            self._futures[name].set_result(self._run(self.all[name]))
        for name in chosen:
            if name not in self._futures:
                self._futures[name] = self._pool.submit(self._run, self.all[name])
        self._leftovers: list[str] | None = None

    def outcome(self, name: str) -> Outcome:
        return self._futures[name].result(timeout=RUN_TIMEOUT * 3)

    def _run(self, scenario: Scenario) -> Outcome:
        tmp = self.base / scenario.name
        tmp.mkdir()
        db_path, log_dir = tmp / "cfarena.db", tmp / "logs"
        mark = marker()
        args = ["run-tournament", *(a for b in scenario.bots for a in ("--bot", b)),
                "--players", "2", "--games", str(scenario.games),
                "--rule", f"rounds={scenario.rounds}", "--db", f"sqlite:///{db_path}",
                "--log-dir", str(log_dir), "--timeout-ms", str(scenario.timeout_ms),
                *scenario.options]
        if scenario.name == "daemon":
            self.daemon_watch.start()
        for path in scenario.evict:
            evict(Path(path))
        started = time.monotonic()
        try:
            result = run_cli(*args, cwd=tmp, timeout=RUN_TIMEOUT,
                             env={**dict(scenario.env), "CFARENA_TEST_MARK": mark,
                                  # the page-cache scenarios with the reset on (the
                                  # suite turns it off: tests/conftest.py)
                                  **({OFF_ENV: ""} if scenario.evict else {})})
        finally:
            if scenario.name == "daemon":
                time.sleep(1.0)
                self.daemon_watch.stop()
        outcome = Outcome(scenario, tmp, db_path, log_dir, mark, result,
                          time.monotonic() - started)
        try:
            load(outcome)
        except Exception as exc:  # reported by the tests, with the CLI's output
            outcome.load_error = f"{type(exc).__name__}: {exc}"
        return outcome

    def leftovers(self) -> list[str]:
        """After every scenario ended: sandboxed processes of the scenarios' runs still
        alive (waits 15 s; `tests.harness.sandboxes`: those of the tests running
        alongside are not theirs)."""
        if self._leftovers is None:
            for future in self._futures.values():
                future.exception(timeout=RUN_TIMEOUT * 3)
            deadline = time.monotonic() + 15
            while True:
                left = [str(p) for p in run_sandboxes(self.base)]
                if not left or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            self._leftovers = left
        return self._leftovers

    def tcp_connections(self) -> int:
        """Connections made to the test's TCP listener so far."""
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=True)
        self.listener.close()


# ---------------------------------------------------------- shared checks
def assert_fair_run(outcome: Outcome, arena: Arena) -> None:
    """What every scenario must show, whatever the attack:

    the CLI succeeded without a traceback; all matches (both rotations of
    each deal) are stored as finished with totals and ranks for every seat; the bots that do not
    attack had no fault; and no process of the run survives it (no process
    with a sandbox uid in the run's sandboxes, nothing carrying the run's marker).
    """
    assert outcome.result.returncode == 0, outcome.describe()
    assert "Traceback" not in outcome.result.stderr, outcome.describe()
    assert outcome.load_error is None, f"{outcome.load_error}\n{outcome.describe()}"
    assert len(outcome.matches) == 2 * outcome.scenario.games, outcome.describe()
    for m in outcome.matches:
        assert m.status.value == "finished", (m.key, m.status, m.reason)
        assert len(m.seats) == 2
        for s in m.seats:
            assert s.total is not None and s.rank is not None, (m.key, s)
        detail = outcome.details[m.id]
        for f in detail.faults:
            assert f.bot_name in outcome.scenario.hostile, \
                f"{m.key}: a fault of a bot that does not attack: {f}"
    assert arena.leftovers() == [], "sandboxed processes survived:\n" + \
        "\n".join(arena.leftovers())
    assert processes_with_marker(outcome.mark) == []
    assert cmdline_processes(outcome.mark) == []
