#!/usr/bin/env python3
"""`cfarena serve` with hundreds of connected bots: how many matches it holds.

    python benchmarks/arena.py [--bots 500] [--concurrency 125] [--players 4]
                               [--timeout-ms 1000] [--warmup 15] [--seconds 60]
                               [--bot-procs 2] [--db URL]

It registers `--bots` bots with `cfarena bots add` (the command run in one
process, not 500 interpreter starts), starts `cfarena serve --http-port` on
them, and connects every bot over real gRPC from `--bot-procs` processes of
light bots (raw stubs, one channel and stream per bot, capacity 1, answering
every Turn with move 0 at once). `--concurrency` may be a list (32,64,125):
serve is restarted for each level, the bots reconnect. Per level, after the
warm-up, over `--seconds`:

- matches per minute and decisions per second (from serve's /metrics);
- false timeouts: every timeout fault (the bots answer at once, so each is the
  arena's), which must be 0;
- decision latency at the referee (Turn written to Action read, from the
  stored game logs) and the part of it the arena adds: that minus the bot's own
  time (Turn parsed to Action handed to gRPC, measured in the bot processes and
  paired with the log by match, bot and turn id): gRPC both ways, both sides'
  event loops, the machine's contention (referee and bots share its CPUs);
- the serve process's memory: RSS at the end of the level, and its peak.

Only the CLI, /metrics and `Database.list_matches/get_log` are used, so the
driver keeps working as the arena's core changes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.harness
from typing import Any

from tests.harness.ports import free_port

HERE = Path(__file__).resolve()
CFARENA = str(Path(sys.executable).with_name("cfarena"))


# ------------------------------------------------------------ the bot processes

async def _bot(server: str, name: str, token: str, times: list[tuple[str, str, int, float]],
               stop: asyncio.Event) -> None:
    """One bot: a stream of capacity 1, reconnecting whenever it ends, until `stop`."""
    import grpc

    from cfarena.v1 import arena_pb2 as pb

    perf = time.perf_counter
    while not stop.is_set():
        try:
            # its own TCP connection, as a bot on its own machine has (channels of one
            # process would otherwise share one, and the referee allows 32 streams on one)
            options = [("grpc.use_local_subchannel_pool", 1)]
            async with grpc.aio.insecure_channel(server, options) as channel:
                call = channel.stream_stream(
                    "/cfarena.v1.Arena/Play",
                    request_serializer=pb.BotMessage.SerializeToString,
                    response_deserializer=pb.RefereeMessage.FromString)()
                await call.write(pb.BotMessage(hello=pb.Hello(
                    token=token, protocol="cfarena.v1", capacity=1, client="arena-bench")))
                async for msg in call:
                    if msg.WhichOneof("kind") != "turn":
                        continue
                    t0 = perf()
                    turn = msg.turn
                    action = pb.BotMessage(action=pb.Action(
                        match_id=turn.match_id, turn_id=turn.turn_id, move_index=0))
                    times.append((turn.match_id, name, turn.turn_id, (perf() - t0) * 1000.0))
                    await call.write(action)
        except grpc.aio.AioRpcError:
            pass
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.3)


async def _bots_main(server: str, names: list[str], out: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    times: list[tuple[str, str, int, float]] = []
    tasks = [loop.create_task(_bot(server, n, _token(n), times, stop)) for n in names]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    out.write_text(json.dumps(times))


def _token(name: str) -> str:
    return f"bench-token-{name}"


# ------------------------------------------------------------------ the driver

def _register(names: list[str], db: str) -> None:
    """`cfarena bots add NAME --token T --quiet` for every name, in one process."""
    code = (
        "import sys, typer.main\n"
        "from cfarena.server.cli import app\n"
        "cmd = typer.main.get_command(app)\n"
        "db = sys.argv[1]\n"
        "for name in sys.argv[2:]:\n"
        "    cmd.main(['bots', 'add', name, '--token', 'bench-token-' + name, '--quiet',\n"
        "              '--db', db], standalone_mode=False)\n")
    subprocess.run([sys.executable, "-c", code, db, *names], check=True)


def _scrape(url: str) -> dict[str, float]:
    """The samples of a /metrics page: 'name{labels}' -> value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def _rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def _stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _finished_logs(db: str, seen: set[str]) -> list[dict[str, Any]]:
    """Game logs of the finished matches not in `seen` (which is updated)."""
    from cfarena.server.storage import open_database

    logs = []
    with open_database(db) as database:
        for match in database.list_matches(status="finished", limit=None):
            if match.id in seen:
                continue
            seen.add(match.id)
            log = database.get_log(match.id)
            if log is not None:
                logs.append(log)
    return logs


def _level(args: argparse.Namespace, concurrency: int, db: str, tmp: Path,
           bot_server: list[str], seen: set[str]) -> dict[str, Any]:
    port, http = int(bot_server[0].rsplit(":", 1)[1]), free_port()
    metrics = f"http://127.0.0.1:{http}/metrics"
    log = open(tmp / f"serve-{concurrency}.log", "wb")  # noqa: SIM115
    serve = subprocess.Popen(
        [CFARENA, "serve", "--port", str(port), "--http-port", str(http), "--players",
         str(args.players), "--concurrency", str(concurrency), "--timeout-ms",
         str(args.timeout_ms), "--db", db], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        connected = 0.0
        while True:  # every bot connected
            if serve.poll() is not None:
                raise SystemExit(f"serve exited: {(tmp / f'serve-{concurrency}.log').read_text()}")
            with contextlib.suppress(OSError, KeyError):
                connected = _scrape(metrics)["cfarena_bots_connected"]
                if connected >= args.bots:
                    break
            if time.monotonic() > deadline:
                tail = (tmp / f"serve-{concurrency}.log").read_text()[-2000:]
                raise SystemExit(f"only {connected:.0f} of {args.bots} bots connected within "
                                 f"120 s; serve's log ends:\n{tail}")
            time.sleep(0.5)
        time.sleep(args.warmup)
        _finished_logs(db, seen)  # the warm-up's matches are not counted
        before, t0 = _scrape(metrics), time.monotonic()
        time.sleep(args.seconds)
        after, elapsed = _scrape(metrics), time.monotonic() - t0
        rss, peak = _rss_mib(serve.pid)
        logs = _finished_logs(db, seen)
    finally:
        _stop(serve)
        log.close()

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    return {
        "concurrency": concurrency,
        "matches_per_min": delta('cfarena_matches_total{status="finished"}') * 60 / elapsed,
        "decisions_per_s": delta("cfarena_decisions_total") / elapsed,
        "false_timeouts": delta('cfarena_faults_total{kind="timeout"}'),
        "other_faults": sum(delta(k) for k in after
                            if k.startswith("cfarena_faults_total") and "timeout" not in k),
        "running": after.get("cfarena_matches_running", 0.0),
        "rss_mib": rss,
        "peak_rss_mib": peak,
        "logs": logs,
    }


def _latencies(logs: list[dict[str, Any]], bot_times: dict[tuple[str, str, int], float]
               ) -> tuple[list[float], list[float]]:
    """(referee-measured ms, arena-added ms) of every decision in the logs."""
    at_referee, added = [], []
    for log in logs:
        seats = log["seats"]
        for action in log["actions"]:
            ms = action.get("ms")
            if ms is None:
                continue
            at_referee.append(ms)
            own = bot_times.get((log["match_id"], seats[action["seat"]], action["turn_id"]))
            if own is not None:
                added.append(ms - own)
    return at_referee, added


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bots", type=int, default=500)
    ap.add_argument("--concurrency", default="125",
                    help="concurrent matches, or a comma-separated list of levels")
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--timeout-ms", type=int, default=1000)
    ap.add_argument("--warmup", type=float, default=15.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--bot-procs", type=int, default=2)
    ap.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    ap.add_argument("--bot-worker", nargs=3, metavar=("SERVER", "OUT", "NAMES"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bot_worker:
        server, out, names = args.bot_worker
        asyncio.run(_bots_main(server, names.split(","), Path(out)))
        return

    levels = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="cfarena-arena-bench-") as tmp_name:
        tmp = Path(tmp_name)
        db = args.db or f"sqlite:///{tmp / 'arena.db'}"
        names = [f"b{i:04d}" for i in range(args.bots)]
        started = time.monotonic()
        _register(names, db)
        print(f"registered {args.bots} bots with `cfarena bots add` in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        server = f"127.0.0.1:{free_port()}"
        workers = []
        try:
            for k in range(args.bot_procs):
                mine = names[k::args.bot_procs]
                workers.append(subprocess.Popen(
                    [sys.executable, str(HERE), "--bot-worker", server,
                     str(tmp / f"bots-{k}.json"), ",".join(mine)]))
            seen: set[str] = set()
            results = [_level(args, c, db, tmp, [server], seen) for c in levels]
        finally:
            for worker in workers:
                _stop(worker)
        bot_times: dict[tuple[str, str, int], float] = {}
        for k in range(args.bot_procs):
            path = tmp / f"bots-{k}.json"
            if path.exists():
                for match_id, name, turn_id, ms in json.loads(path.read_text()):
                    bot_times[(match_id, name, turn_id)] = ms
        own = list(bot_times.values())
        print(f"{args.bots} bots in {args.bot_procs} processes, {args.players}-player "
              f"standard matches, {args.timeout_ms} ms move timeout, {args.seconds:g} s per "
              f"level after {args.warmup:g} s of warm-up; cpus: {os.cpu_count()}")
        print(f"bots' own time per decision: p50 {_percentile(own, 0.5):.3f} ms, "
              f"p99 {_percentile(own, 0.99):.3f} ms")
        for r in results:
            at_referee, added = _latencies(r.pop("logs"), bot_times)
            print(f"concurrency {r['concurrency']}: {r['matches_per_min']:.0f} matches/min, "
                  f"{r['decisions_per_s']:.0f} decisions/s, false timeouts "
                  f"{r['false_timeouts']:.0f} (other faults {r['other_faults']:.0f}), "
                  f"running at the end {r['running']:.0f}")
            print(f"  decision latency at the referee: p50 {_percentile(at_referee, 0.5):.1f} "
                  f"ms, p99 {_percentile(at_referee, 0.99):.1f} ms, max "
                  f"{max(at_referee, default=float('nan')):.1f} ms "
                  f"({len(at_referee)} decisions)")
            print(f"  added by the arena (minus the bot's own time): p50 "
                  f"{_percentile(added, 0.5):.1f} ms, p99 {_percentile(added, 0.99):.1f} ms "
                  f"({len(added)} paired)")
            print(f"  serve's memory: RSS {r['rss_mib']:.0f} MiB, peak "
                  f"{r['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
