#!/usr/bin/env python3
"""Does `cfarena serve` hold steady memory over many matches? A soak of the ladder.

    python benchmarks/soak.py [--matches 1000] [--warmup 100] [--players 2]
                              [--bots 4] [--concurrency 4] [--rounds 1]
                              [--viewers [--no-live | --no-pages]] [--chaos]
                              [--minutes M] [--no-web] [--probe [--trace NFRAMES]]
                              [--keep DIR] [--baseline PATH/TO/cfarena [--together]]

A real `cfarena serve --http-port` (the web page and API on; `--no-web`: without
--http-port) on a SQLite file, with `--bots` sample bots (random and greedy, which
answer at once) dialing in through the SDK (`python -m cfarena.sdk run`), plays
short matches (`--rule rounds=N`) until `--warmup` + `--matches` have ended (with
`--chaos`, every 3 s one bot is frozen for 1.5 s, past the default 1000 ms timeout,
or killed and restarted). With
`--viewers`, a browser-like spectator watches the whole time: a stream of
/api/events and what the leaderboard page's script does with it (GET
/api/matches/ID when a match starts, /api/leaderboard when one is stored), a visitor
opening each stored match's page, replay and log (/matches/ID, /matches/ID/replay,
/api/matches/ID/log) and the page of one of its bots (/bots/NAME, each seat's in
turn) and, for every match it is told has started, that match's
/api/matches/ID/live stream (the match page's) until it ends. To tell which of
them costs memory, `--no-live` leaves out the live streams and `--no-pages` the
visits to each ended match's pages.

serve's RSS (/proc/PID/status) is sampled with the count of ended matches (from its
/metrics; with `--no-web` from the database) every `--every` seconds. Printed: the
matches played, RSS after the warm-up and at the end, and the growth per match (KiB
per match): the slope of a least-squares line through the samples after the
warm-up, which a few allocator steps move much less than end minus start does, and
the same slope over the first and the second half of those samples (growth that levels
off, caches filling to their size, has a second half near zero).
With `--baseline CFARENA` (e.g. another checkout's .venv/bin/cfarena) the same soak
runs on it too, first (`--together`: at the same time, under the same load), and
both are printed. `--minutes M` plays for M minutes after the warm-up instead of
`--matches` (a loaded machine plays fewer matches a minute). With `--probe`, serve runs under
benchmarks/serve_probe.py, which samples its memory from inside: the same slopes are
printed for RSS by kind (the main malloc arena, the other arenas, Python's own arenas,
files), Python's allocated blocks, the stalls the referee's loop keeps, SQLite's
allocated bytes, glibc's malloc bytes in use and held free (growth in use is a leak,
in Python or in C; free bytes that grow are fragmentation) and the malloc heap's size.
SQLite's bytes are also split into its connections' page caches, prepared statements
and schemas, with the distinct SQL texts serve ran (new ones after the warm-up are
listed in probe/statements.txt) and serve's threads.
With `--trace NFRAMES` tracemalloc runs from the end of the warm-up, and the
allocations that grew from a third of the run (of `--matches`, or of `--minutes`) to
its end are written by traceback, after the types of objects whose count grew, to
probe/tracemalloc.txt in `--keep`'s directory (tracemalloc slows serve several
times and its own tables inflate RSS and malloc's figures: trace in one run, measure
in another). `--keep DIR` plays in DIR/this (DIR/baseline) and leaves serve's log,
the database and the probe's files there. The exit status is 0 whatever the result
(a benchmark reports; tests/web/test_soak.py judges).

`run_soak` is also what that test uses.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.harness
from tests.harness.ports import free_port

CFARENA = str(Path(sys.executable).with_name("cfarena"))
SAMPLES = ("cfarena.bots.random_bot", "cfarena.bots.greedy")


@dataclass
class Soak:
    """What one soak measured."""

    matches: int  # ended after the warm-up
    seconds: float  # the time they took
    samples: list[tuple[int, float]]  # (matches ended, RSS in KiB) after the warm-up
    viewed: int = 0  # match streams the spectator opened
    errors: list[str] = field(default_factory=list)  # what the spectator could not do
    probe: list[dict[str, float]] = field(default_factory=list)  # serve_probe's rows

    @property
    def rss_start_kib(self) -> float:
        return self.samples[0][1]

    @property
    def rss_end_kib(self) -> float:
        return self.samples[-1][1]

    @property
    def kib_per_match(self) -> float:
        """The least-squares slope of RSS over matches ended."""
        return _slope(self.samples)

    @property
    def kib_per_match_by_half(self) -> tuple[float, float]:
        """The slope over the first and the second half of the samples: growth that
        levels off (caches filling up to their size) has a second half near zero."""
        half = len(self.samples) // 2
        return _slope(self.samples[:half + 1]), _slope(self.samples[half:])


    def probe_slopes(self, column: str) -> tuple[float, float, float] | None:
        """`column` of the probe's rows after the warm-up (bytes, or a count) per
        match: over all of them, the first half and the second half (None: not
        probed)."""
        start = self.samples[0][0]
        rows = [(int(row["ended"]), float(row[column])) for row in self.probe
                if row["ended"] >= start and row.get(column) is not None]
        if len(rows) < 2:
            return None
        half = len(rows) // 2
        return _slope(rows), _slope(rows[:half + 1]), _slope(rows[half:])


def _slope(samples: list[tuple[int, float]]) -> float:
    """The least-squares slope of (x, y) samples (0 for fewer than two x values)."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in samples)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in samples)
    return sxy / sxx if sxx else 0.0


def rss_kib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def _ended(http_port: int | None, db: str) -> int:
    """Matches ended (finished or aborted) so far."""
    if http_port is None:
        path = db.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as database:
            row = database.execute("SELECT count(*) FROM matches WHERE status IN "
                               "('finished', 'aborted')").fetchone()
        return int(row[0])
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    return sum(int(float(line.rpartition(" ")[2])) for line in text.splitlines()
               if line.startswith("cfarena_matches_total{"))


class Spectator:
    """A browser on the arena's pages: /api/events, and each started match's live
    stream until it ends (a thread per stream, as an EventSource each)."""

    def __init__(self, http_port: int, live: bool = True, pages: bool = True) -> None:
        self.port = http_port
        self.live = live  # open each started match's live stream
        self.pages = pages  # visit each ended match's pages
        self.viewed = 0
        self.bots_seen = 0  # bot pages visited
        self.errors: list[str] = []
        self.started = self.closing = False
        self._conns: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()  # one leaderboard fetch at a time

    def start(self) -> None:
        self.started = True
        threading.Thread(target=self._stream, args=("/api/events", self._on_ladder),
                         daemon=True).start()

    def close(self) -> None:
        self.closing = True
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)

    def _on_ladder(self, kind: str, data: str) -> None:
        """What the leaderboard page's script does with the ladder's events."""
        if kind == "started" and self.live:
            match_id = json.loads(data)["match"]
            self.viewed += 1
            threading.Thread(target=self._get, args=(f"/api/matches/{match_id}",),
                             daemon=True).start()
            threading.Thread(target=self._stream, daemon=True,
                             args=(f"/api/matches/{match_id}/live", None)).start()
        elif kind in ("finished", "aborted") and self.pages:
            match_id = json.loads(data)["match"]
            threading.Thread(target=self._visit, args=(match_id, kind == "finished"),
                             daemon=True).start()

    def _visit(self, match_id: str, finished: bool) -> None:
        """A visitor follows the ended match's link: its page, its replay, its log (a
        finished match's), and the page of one of its bots (each seat's in turn, match
        after match)."""
        if not self._refreshing.locked():
            self._refresh()
        self._get(f"/matches/{match_id}")
        self._get(f"/matches/{match_id}/replay")
        if finished:
            self._get(f"/api/matches/{match_id}/log")
        seats = json.loads(self._get(f"/api/matches/{match_id}") or "{}").get("seats", [])
        if seats:
            with self._lock:
                self.bots_seen += 1
                bot = seats[self.bots_seen % len(seats)]["bot"]
            self._get(f"/bots/{bot}")

    def _refresh(self) -> None:
        with self._refreshing:
            self._get("/api/leaderboard")

    def _get(self, path: str) -> str | None:
        """The body of GET `path` (None, and an error noted, unless 200)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                self.errors.append(f"{path}: HTTP {resp.status}")
                return None
            return body.decode("utf-8", "replace")
        except OSError as exc:
            if not self.closing:
                self.errors.append(f"{path}: {exc}")
            return None
        finally:
            conn.close()

    def _stream(self, path: str, on_event: object) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        with self._lock:
            self._conns.add(conn)
        try:
            conn.request("GET", path, headers={"Accept": "text/event-stream"})
            resp = conn.getresponse()
            if resp.status != 200:
                self.errors.append(f"{path}: HTTP {resp.status}")
                return
            kind, data = "message", []
            while line := resp.readline():  # ends with the response (chunks decoded)
                text = line.decode("utf-8").rstrip("\r\n")
                if text.startswith("event:"):
                    kind = text[6:].strip()
                elif text.startswith("data:"):
                    data.append(text[5:].strip())
                elif not text:
                    if data and callable(on_event):
                        on_event(kind, "\n".join(data))
                    kind, data = "message", []
        except (OSError, http.client.HTTPException) as exc:  # (cut within a chunk)
            if not self.closing:
                self.errors.append(f"{path}: {exc!r}")
        finally:
            conn.close()
            with self._lock:
                self._conns.discard(conn)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_soak(tmp: Path, *, matches: int, warmup: int, players: int = 2, bots: int = 4,
             concurrency: int = 4, rounds: int = 1, viewers: bool = False,
             live: bool = True, pages: bool = True,
             web: bool = True, chaos: bool = False, every: float = 0.5, cfarena: str = CFARENA,
             timeout_s: float = 600.0, probe: bool = False, trace_frames: int = 0,
             minutes: float | None = None, stop: threading.Event | None = None) -> Soak:
    """Play `warmup` + `matches` matches on a fresh serve in `tmp` (see the module doc);
    with `minutes`, play for that long after the warm-up instead, however many
    matches that is; `stop` set ends it early. AssertionError (with serve's log) if
    serve dies or stops making progress."""
    tmp.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{tmp / 'soak.db'}"
    env = dict(os.environ)
    # an older cfarena's bots run on its own interpreter (its SDK)
    env["PATH"] = f"{Path(cfarena).parent}{os.pathsep}{env.get('PATH', '')}"
    python = str(Path(cfarena).with_name("python"))
    names = [f"soak{i}" for i in range(bots)]
    tokens = {}
    for name in names:
        added = subprocess.run([cfarena, "bots", "add", name, "--db", db],
                               capture_output=True, text=True, check=True, env=env)
        tokens[name] = added.stdout.strip().splitlines()[-1]
    port, http_port = free_port(), (free_port() if web else None)
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(tmp / f"{name}.err", "wb") as err:
            proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.DEVNULL, stderr=err,
                                    env=env, start_new_session=True)
        procs.append(proc)
        return proc

    def failed(what: str) -> AssertionError:
        log = (tmp / "serve.err").read_text(errors="replace")[-3000:]
        return AssertionError(f"{what}; serve's log ends:\n{log}")

    spectator = Spectator(http_port, live, pages) if viewers and http_port is not None else None
    try:
        web_args = ["--http-port", str(http_port)] if http_port is not None else []
        probe_dir = tmp / "probe"
        runner = [cfarena]
        if probe:  # serve inside benchmarks/serve_probe.py, on cfarena's interpreter
            probe_dir.mkdir(exist_ok=True)
            runner = [python, str(Path(__file__).with_name("serve_probe.py")),
                      str(probe_dir), str(warmup), str(trace_frames), "--"]
        serve = start("serve", [*runner, "serve", "--port", str(port), *web_args,
                                "--db", db, "--players", str(players), "--rule",
                                f"rounds={rounds}", "--concurrency", str(concurrency)])
        bot_argv = {name: [python, "-m", "cfarena.sdk", "run", SAMPLES[k % len(SAMPLES)],
                           "--server", f"127.0.0.1:{port}", f"--token={tokens[name]}",
                           "--capacity", str(concurrency), "--retries", "50", "-q"]
                    for k, name in enumerate(names)}
        bot_procs = {name: start(name, argv) for name, argv in bot_argv.items()}
        chaos_at, chaos_n = time.monotonic() + 5, 0
        deadline = time.monotonic() + timeout_s
        samples: list[tuple[int, float]] = []
        began = 0.0
        last, moved = -1, time.monotonic()
        stall_s = 300 if trace_frames else 60  # tracemalloc slows serve down, snapshots stop it
        while True:
            if serve.poll() is not None:
                raise failed(f"serve exited {serve.returncode}")
            try:
                ended = _ended(http_port, db)
            except (OSError, sqlite3.Error):  # not listening yet, no tables yet
                ended = 0
            else:
                if spectator is not None and not spectator.started:
                    spectator.start()
            now = time.monotonic()
            if ended != last:
                last, moved = ended, now
            elif now - moved > (stall_s if ended else 180):  # serve and the bots start first
                raise failed(f"no match ended for {now - moved:.0f} s (at {ended})")
            if stop is not None and stop.is_set():
                raise failed(f"stopped at {ended} matches")
            if minutes is None and now > deadline:
                raise failed(f"only {ended} of {warmup + matches} matches in {timeout_s:g} s")
            if chaos and now >= chaos_at:  # a bot frozen past its timeout, or killed
                victim = names[chaos_n % len(names)]
                proc = bot_procs[victim]
                if chaos_n % 2:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    bot_procs[victim] = start(victim, bot_argv[victim])
                else:
                    os.killpg(proc.pid, signal.SIGSTOP)
                    time.sleep(1.5)
                    os.killpg(proc.pid, signal.SIGCONT)
                chaos_at, chaos_n = time.monotonic() + 3, chaos_n + 1
            if probe:
                (probe_dir / "ended.new").write_text(str(ended))
                (probe_dir / "ended.new").replace(probe_dir / "ended")
            if ended >= warmup:
                if not samples:
                    began = now
                samples.append((ended, rss_kib(serve.pid)))
                done = (ended - samples[0][0] if minutes is None else now - began) / (
                    matches if minutes is None else minutes * 60)
                if probe and done >= 1 / 3 and not (probe_dir / "snap").exists():
                    (probe_dir / "snap").write_text("a")  # tracemalloc's first snapshot
                if done >= 1:
                    break
            time.sleep(every)
        seconds = time.monotonic() - began
        if trace_frames:  # the second snapshot, and the probe's report, before serve stops
            (probe_dir / "snap").write_text("b")
            report = probe_dir / "tracemalloc.txt"
            waited = time.monotonic() + 600
            while not report.exists() and serve.poll() is None and time.monotonic() < waited:
                time.sleep(1.0)
    finally:
        if spectator is not None:
            spectator.close()
        for proc in reversed(procs):
            _stop(proc)
    viewed = spectator.viewed if spectator is not None else 0
    errors = spectator.errors if spectator is not None else []
    rows = []
    if probe and (probe_dir / "stats.jsonl").exists():
        rows = [json.loads(line) for line in
                (probe_dir / "stats.jsonl").read_text().splitlines() if line]
    return Soak(samples[-1][0] - samples[0][0], seconds, samples, viewed, errors, rows)


def _report(label: str, soak: Soak) -> None:
    first, second = soak.kib_per_match_by_half
    print(f"{label}: {soak.matches} matches in {soak.seconds:.0f} s; serve RSS "
          f"{soak.rss_start_kib / 1024:.1f} MiB after the warm-up, "
          f"{soak.rss_end_kib / 1024:.1f} MiB at the end; growth "
          f"{soak.kib_per_match:.1f} KiB/match (fit over {len(soak.samples)} samples; "
          f"first half {first:.1f}, second half {second:.1f})"
          + (f"; {soak.viewed} live streams watched" if soak.viewed else "")
          + (f"; spectator errors: {soak.errors[:3]}" if soak.errors else ""), flush=True)
    for column, scale, unit, what in PROBED:
        slopes = soak.probe_slopes(column)
        if slopes is not None:
            print(f"  {what}: {slopes[0] / scale:.2f} {unit}/match (first half "
                  f"{slopes[1] / scale:.2f}, second half {slopes[2] / scale:.2f})", flush=True)


PROBED = (  # serve_probe's columns: (name, its value per unit, the unit, what it is)
    ("rss_heap", 1, "KiB", "RSS of the main malloc arena"),
    ("rss_arenas", 1, "KiB", "RSS of the other malloc arenas"),
    ("rss_anon", 1, "KiB", "RSS of other anonymous memory (Python's arenas)"),
    ("rss_file", 1, "KiB", "RSS of mapped files"),
    ("py_blocks", 1, "blocks", "Python allocator blocks in use"),
    ("stalls", 1, "stalls", "stalls of the referee's loop kept (referee/lag.py)"),
    ("traced", 1024, "KiB", "bytes traced by tracemalloc"),
    ("sqlite", 1024, "KiB", "SQLite's allocated bytes"),
    ("sqlite_cache", 1024, "KiB", "SQLite's page caches"),
    ("sqlite_stmt", 1024, "KiB", "SQLite's prepared statements"),
    ("sqlite_schema", 1024, "KiB", "SQLite's schemas"),
    ("sqlite_conns", 1, "connections", "SQLite connections open"),
    ("statements", 1, "texts", "distinct SQL texts run"),
    ("threads", 1, "threads", "threads"),
    ("in_use", 1024, "KiB", "malloc bytes in use (heap)"),
    ("mmapped", 1024, "KiB", "malloc bytes in mmapped chunks"),
    ("free", 1024, "KiB", "malloc bytes held free (heap)"),
    ("heap", 1024, "KiB", "malloc heap size"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matches", type=int, default=1000, help="counted after the warm-up")
    ap.add_argument("--warmup", type=int, default=100, help="matches before measuring")
    ap.add_argument("--players", type=int, default=2)
    ap.add_argument("--bots", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--minutes", type=float,
                    help="play this long after the warm-up instead of --matches (a "
                         "loaded machine plays fewer matches a minute)")
    ap.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    ap.add_argument("--viewers", action="store_true",
                    help="a spectator on /api/events and every live match")
    ap.add_argument("--no-live", action="store_true",
                    help="the spectator opens no live match stream (only the pages)")
    ap.add_argument("--no-pages", action="store_true",
                    help="the spectator visits no ended match's pages (only live streams)")
    ap.add_argument("--chaos", action="store_true",
                    help="every 3 s a bot is frozen for 1.5 s (SIGSTOP) or killed and "
                         "restarted, in turn (the audit's soak)")
    ap.add_argument("--no-web", action="store_true", help="serve without --http-port")
    ap.add_argument("--probe", action="store_true",
                    help="sample serve's memory from inside (benchmarks/serve_probe.py)")
    ap.add_argument("--trace", type=int, default=0, metavar="NFRAMES",
                    help="with --probe: tracemalloc from the warm-up's end; the growth by "
                         "traceback goes to --keep's probe/tracemalloc.txt")
    ap.add_argument("--keep", metavar="DIR",
                    help="play in DIR (kept: serve's log, the database, the probe's files) "
                         "instead of a temporary directory")
    ap.add_argument("--baseline", metavar="CFARENA",
                    help="another cfarena executable to soak first, for comparison")
    ap.add_argument("--together", action="store_true",
                    help="with --baseline: both soaks at the same time (the same load on "
                         "a shared machine; each gets half of it)")
    args = ap.parse_args()
    # SIGTERM ends the soak as Ctrl-C does: its serve and bots are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    print(f"{args.players}-player matches of {args.rounds} round(s), {args.bots} SDK bots, "
          f"{args.concurrency} at once, web {'off' if args.no_web else 'on'}"
          f"{', a spectator watching' if args.viewers else ''}"
          f"{' (no live streams)' if args.viewers and args.no_live else ''}"
          f"{' (no match pages)' if args.viewers and args.no_pages else ''}; "
          f"{args.warmup} matches of warm-up; {os.cpu_count()} cpus", flush=True)
    runs = [("baseline", args.baseline)] if args.baseline else []
    runs.append(("this", CFARENA))
    stop = threading.Event()

    def soak(label: str, exe: str) -> None:
        with contextlib.ExitStack() as stack:
            tmp = (Path(args.keep) / label if args.keep else
                   Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cfarena-soak-"))))
            try:
                result = run_soak(
                    tmp, matches=args.matches, warmup=args.warmup, players=args.players,
                    bots=args.bots, concurrency=args.concurrency, rounds=args.rounds,
                    viewers=args.viewers, live=not args.no_live, pages=not args.no_pages,
                    web=not args.no_web, chaos=args.chaos, every=args.every, cfarena=exe,
                    timeout_s=max(600.0, (args.warmup + args.matches) * args.rounds
                                  * args.players * 0.5) * (4 if args.trace else 1)
                    * (2 if args.together else 1),
                    probe=args.probe or bool(args.trace), trace_frames=args.trace,
                    minutes=args.minutes, stop=stop)
            except AssertionError as exc:
                print(f"{label} ({exe}): {exc}", flush=True)
                return
        _report(f"{label} ({exe})", result)

    if not (args.together and args.baseline):
        for label, exe in runs:
            soak(label, exe)
        return
    threads = [threading.Thread(target=soak, args=run, daemon=True) for run in runs]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(1.0)
    finally:  # Ctrl-C or SIGTERM: each soak stops its serve and bots
        stop.set()
        for thread in threads:
            thread.join(120)

if __name__ == "__main__":
    main()
