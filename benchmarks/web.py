#!/usr/bin/env python3
"""The web pages under a running arena: page load times, and what live viewers cost the
referee.

    python benchmarks/web.py [--seconds 20] [--viewers 20] [--loads 7] [--db URL]
                             [--rounds 4] [--mc-budget-ms 120] [--concurrency 2]

It starts `cfarena serve --http-port` with the four sample bots dialing in
(tests/web/live_arena.py: random, greedy and smart answer at once, montecarlo thinks
`--mc-budget-ms` per decision, so matches last a few seconds), then, in two phases of
`--seconds` each:

1. no viewer: page load time of `/` and of a finished match's page, `--loads` times
   each in headless Chromium (Playwright; Debian's chromium), the median and max of
   the navigation timing (request start to the load event);
2. `--viewers` browsers' worth of live views: that many plain-HTTP SSE clients on
   running matches' live streams (`/api/matches/ID/live`, moving to another running
   match when theirs ends) and as many on the leaderboard stream (`/api/events`);
   the page loads again.

Per phase, the referee's decision latency (Turn sent to Action read, the `ms` of each
action in the stored game logs of the matches that finished in the phase): p50/p99 of
the quick bots' decisions (random, greedy, smart: their own time is well under a
millisecond, so this is the arena's part) and of all decisions; and /metrics'
cfarena_decision_seconds histogram's p99 bucket over the phase.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # tests.web.live_arena and tests.browser

from tests.browser import chromium, watched_page  # noqa: E402
from tests.web.arena import WebArena  # noqa: E402
from tests.web.live_arena import get_json, live_arena  # noqa: E402

QUICK = {"random", "greedy", "smart"}


class Viewer(threading.Thread):
    """A plain-HTTP SSE client: reads a stream line by line until told to stop; with
    `live`, it follows running matches' live streams one after another."""

    def __init__(self, arena: WebArena, stop: threading.Event, live: bool,
                 source: str = "127.0.0.1") -> None:
        super().__init__(daemon=True)
        self.arena, self.stop, self.live, self.source = arena, stop, live, source
        self.events = self.bytes = self.streams = self.refused = 0
        self.conn: http.client.HTTPConnection | None = None

    def _path(self) -> str | None:
        if not self.live:
            return "/api/events"
        rows = get_json(self.arena, "/api/matches?status=running&limit=50")
        if not rows:
            return None
        row = rows[hash(self.name) % len(rows)]
        return f"/api/matches/{row['id']}/live"

    def run(self) -> None:
        while not self.stop.is_set():
            path = self._path()
            if path is None:
                time.sleep(0.2)
                continue
            self.conn = http.client.HTTPConnection("127.0.0.1", self.arena.http_port,
                                                   timeout=30, source_address=(self.source, 0))
            try:
                self.conn.request("GET", path, headers={"Accept": "text/event-stream"})
                response = self.conn.getresponse()
                if response.status != 200:
                    self.refused += 1
                    response.read()
                    time.sleep(0.5)
                    continue
                self.streams += 1
                while not self.stop.is_set():
                    line = response.readline()
                    if not line:
                        break  # the stream ended (its match did)
                    self.bytes += len(line)
                    if line.startswith(b"data:"):
                        self.events += 1
            except OSError:
                time.sleep(0.2)
            finally:
                self.conn.close()

    def close(self) -> None:
        if self.conn is not None and self.conn.sock is not None:
            self.conn.sock.close()  # wakes a blocked readline


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def _histogram_p99(before: dict[str, float], after: dict[str, float]) -> str:
    """The upper bound of the bucket holding the 99th percentile of the phase's decisions."""
    prefix = "cfarena_decision_seconds_bucket{le=\""
    buckets = sorted((float(k[len(prefix):-2]), after[k] - before.get(k, 0.0))
                     for k in after if k.startswith(prefix))
    if not buckets or buckets[-1][1] == 0:
        return "n/a"
    total = buckets[-1][1]
    bound = next(le for le, count in buckets if count >= 0.99 * total)
    return f"<= {bound * 1000:g} ms" if bound != float("inf") else "> the last bucket"


def _finished_ids(arena: WebArena) -> set[str]:
    return {str(r["id"]) for r in get_json(arena, "/api/matches?status=finished&limit=500")}


def _latencies(arena: WebArena, ids: set[str]) -> tuple[list[float], list[float]]:
    """(quick bots' ms, all ms) of the decisions in these matches' logs."""
    quick: list[float] = []
    every: list[float] = []
    for match in ids:
        log = get_json(arena, f"/api/matches/{match}/log")
        seats = log["seats"]
        for action in log["actions"]:
            ms = action.get("ms")
            if ms is None:
                continue
            every.append(ms)
            if seats[action["seat"]] in QUICK:
                quick.append(ms)
    return quick, every


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _page_loads(arena: WebArena, paths: dict[str, str], loads: int) -> dict[str, list[float]]:
    """Navigation timing (ms from request start to the load event) of each page."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    with chromium() as browser, watched_page(browser) as page:
        for _ in range(loads):
            for name, path in paths.items():
                page.page.goto(arena.base + path, wait_until="load")
                times[name].append(float(page.page.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.loadEventEnd - n.requestStart; })()")))
        page.check()
    return times


def _phase(arena: WebArena, args: argparse.Namespace, viewers: int) -> dict[str, Any]:
    stop = threading.Event()
    # each browser from its own loopback address (127.0.0.2, .3, ...): the arena serves
    # at most 20 streams to one client address (docs/WEB.md)
    threads = [Viewer(arena, stop, live, f"127.0.0.{2 + k}") for k in range(viewers)
               for live in (True, False)]
    for thread in threads:
        thread.start()
    time.sleep(2.0 if threads else 0.0)  # the streams open
    finished_before = _finished_ids(arena)
    metrics_before, t0 = _scrape(arena.base + "/metrics"), time.monotonic()
    match = sorted(finished_before)[0]
    loads = _page_loads(arena, {"/": "/", "match": f"/matches/{match}"}, args.loads)
    time.sleep(max(0.0, args.seconds - (time.monotonic() - t0)))
    metrics_after, elapsed = _scrape(arena.base + "/metrics"), time.monotonic() - t0
    new = _finished_ids(arena) - finished_before
    stop.set()
    for thread in threads:
        thread.close()
    for thread in threads:
        thread.join(10)
    quick, every = _latencies(arena, new)
    return {"viewers": viewers, "elapsed": elapsed, "matches": len(new), "loads": loads,
            "quick": quick, "every": every,
            "histogram_p99": _histogram_p99(metrics_before, metrics_after),
            "streams": sum(t.streams for t in threads),
            "refused": sum(t.refused for t in threads),
            "events": sum(t.events for t in threads),
            "kib": sum(t.bytes for t in threads) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    ap.add_argument("--viewers", type=int, default=20, help="browsers' worth of live views")
    ap.add_argument("--loads", type=int, default=7, help="page loads per page and phase")
    ap.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--mc-budget-ms", type=int, default=120)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cfarena-web-bench-") as tmp_name:
        tmp = Path(tmp_name)
        db = args.db or f"sqlite:///{tmp / 'arena.db'}"
        with live_arena(tmp / "arena", db, rounds=args.rounds, mc_budget_ms=args.mc_budget_ms,
                        concurrency=args.concurrency) as arena:
            arena.wait("a finished match", lambda: bool(_finished_ids(arena)), 120)
            results = [_phase(arena, args, 0), _phase(arena, args, args.viewers)]
    print(f"cfarena serve, 4 sample bots (montecarlo {args.mc_budget_ms} ms a decision), "
          f"{args.concurrency} matches at once, {args.rounds}-round standard 4p matches; "
          f"{args.seconds:g} s per phase; db {'given' if args.db else 'SQLite'}")
    for r in results:
        print(f"{r['viewers']} viewers ({r['streams']} streams opened, {r['refused']} "
              f"refused; {r['events']} events, {r['kib']:.0f} KiB received): "
              f"{r['matches']} matches finished in {r['elapsed']:.0f} s")
        for name, times in r["loads"].items():
            print(f"  page load {name}: median {statistics.median(times):.0f} ms, "
                  f"max {max(times):.0f} ms ({len(times)} loads)")
        print(f"  decision latency, quick bots: p50 {_pct(r['quick'], 0.5):.1f} ms, p99 "
              f"{_pct(r['quick'], 0.99):.1f} ms ({len(r['quick'])} decisions); all: p99 "
              f"{_pct(r['every'], 0.99):.1f} ms ({len(r['every'])}); /metrics histogram "
              f"p99 {r['histogram_p99']}")
    print(json.dumps({str(r["viewers"]): {
        "quick_p99_ms": _pct(r["quick"], 0.99),
        "load_median_ms": {k: statistics.median(v) for k, v in r["loads"].items()}}
        for r in results}))


if __name__ == "__main__":
    main()
