#!/usr/bin/env python3
"""Queue workers: matches per minute with 1, 2 and 4 `cfarena worker` processes on this
machine for the same tournament, and what the queue itself costs per match.

    python benchmarks/workers.py [--workers 1,2,4] [--games 8] [--rounds 2]
                                 [--no-sandbox] [--db-cluster URL]

Without `--db-cluster` it starts a throwaway PostgreSQL (tests/harness/postgres.py).
Per level, a fresh database: `cfarena tournaments create` (greedy and smart, 2-player
tables, `--games` deals each played in both seat rotations, a fixed seed), then N workers with
`--concurrency 1 --until-done`. Reported:

- matches per minute, over the span from the first match started to the last stored
  (the matches' own timestamps: worker start-up is not counted);
- per match: its time in a worker (play + store) and, of that, the store;
- the queue's own cost per match, measured apart on the same database: claiming and
  acknowledging a job (a no-op task through procrastinate's worker, `--noop-jobs` of
  them), and the heartbeat (one UPDATE per worker every 2 s, spread over the matches
  played meanwhile); with the store, that is the queue overhead, also given as a share
  of match time: what predicts the scaling across machines (here, on a 2-core machine,
  the workers share the CPUs with their bots and the scaling flattens before that).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))  # tests.harness.postgres
CFARENA = str(Path(sys.executable).with_name("cfarena"))


@contextmanager
def _cluster(url: str | None) -> Iterator[Any]:
    if url is not None:
        yield url
        return
    from tests.harness.postgres import postgres_cluster

    with postgres_cluster() as cluster:
        yield cluster


def _database(cluster: Any, name: str) -> str:
    if isinstance(cluster, str):
        import psycopg

        from tests.harness.postgres import conninfo

        with psycopg.connect(conninfo(cluster), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return cluster.rsplit("/", 1)[0] + f"/{name}"
    url: str = cluster.create_database(name)
    return url


def _run(args: list[str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run([CFARENA, *args, "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"cfarena {' '.join(args[:2])} failed: {done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _span(url: str) -> float:
    import psycopg

    from tests.harness.postgres import conninfo

    with psycopg.connect(conninfo(url)) as conn:
        row = conn.execute(b"select extract(epoch from max(finished_at) - min(started_at)) "
                           b"from matches where status = 'finished'").fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def level(cluster: Any, workers: int, args: argparse.Namespace, cwd: Path) -> dict[str, Any]:
    url = _database(cluster, f"bench_workers_{workers}")
    tournament = ["--bot", "greedy", "--bot", "smart", "--players", "2", "--games",
                  str(args.games), "--rule", f"rounds={args.rounds}", "--seed", "1",
                  *(["--no-sandbox"] if args.no_sandbox else [])]
    created = _run(["tournaments", "create", *tournament, "--db", url], cwd)
    procs = [subprocess.Popen([CFARENA, "worker", "--db", url, "--concurrency", "1",
                               "--until-done", "--json"], cwd=cwd, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) for _ in range(workers)]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    stats = [json.loads(out) for out, _ in outs]
    played = sum(s["played"] for s in stats)
    span = _span(url)
    return {
        "workers": workers, "matches": created["matches"], "played": played,
        "span_s": round(span, 2),
        "matches_per_min": round(created["matches"] / span * 60, 1) if span else None,
        "match_s": round(sum(s["match_s"] for s in stats) / max(played, 1), 3),
        "store_s": round(sum(s["store_s"] for s in stats) / max(played, 1), 4),
        "url": url,
    }


async def _noop_queue(url: str, jobs: int) -> dict[str, float]:
    """Claim + acknowledge of a job, and one heartbeat, on this database (seconds)."""
    from procrastinate.worker import Worker
    from sqlalchemy import create_engine

    from cfarena.server.tournament.job_queue import install_schema, new_app

    engine = create_engine(url)
    install_schema(engine)
    app = new_app(engine)
    engine.dispose()

    @app.task(name="bench.noop", queue="bench-noop")
    async def noop(i: int) -> None:
        return None

    async with app.open_async():
        for i in range(jobs):
            await noop.defer_async(i=i)
        worker = Worker(app, queues=["bench-noop"], concurrency=1, wait=False,
                        install_signal_handlers=False)
        started = time.perf_counter()
        await worker.run()  # type: ignore[no-untyped-call]
        per_job = (time.perf_counter() - started) / jobs
        worker_id = await app.job_manager.register_worker()
        started = time.perf_counter()
        for _ in range(20):
            await app.job_manager.update_heartbeat(worker_id)
        heartbeat = (time.perf_counter() - started) / 20
        await app.job_manager.unregister_worker(worker_id)
    return {"claim_ack_s": per_job, "heartbeat_s": heartbeat}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--noop-jobs", type=int, default=200)
    parser.add_argument("--no-sandbox", action="store_true")
    parser.add_argument("--db-cluster", help="postgresql://... of a server to create "
                        "databases on [default: a throwaway one]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    levels = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as tmp, _cluster(args.db_cluster) as cluster:
        results = [level(cluster, n, args, Path(tmp)) for n in levels]
        queue = asyncio.run(_noop_queue(results[0]["url"], args.noop_jobs))
    heartbeat_every = 2.0  # cfarena worker's default --heartbeat-s
    print(f"{'workers':>7} {'matches':>7} {'span s':>7} {'matches/min':>11} {'x':>5} "
          f"{'match s':>8} {'store ms':>8} {'queue ms':>8} {'share':>6}")
    base = results[0]["matches_per_min"] or 1.0
    for r in results:
        heartbeats = r["match_s"] / heartbeat_every * queue["heartbeat_s"]
        overhead = queue["claim_ack_s"] + heartbeats + r["store_s"]
        r["queue_ms"] = round(overhead * 1000, 2)
        r["queue_share"] = round(overhead / r["match_s"], 4) if r["match_s"] else None
        print(f"{r['workers']:>7} {r['matches']:>7} {r['span_s']:>7} "
              f"{r['matches_per_min']:>11} {(r['matches_per_min'] or 0) / base:>5.2f} "
              f"{r['match_s']:>8} {r['store_s'] * 1000:>8.1f} {r['queue_ms']:>8} "
              f"{(r['queue_share'] or 0) * 100:>5.1f}%")
    print(f"queue, measured apart: claim + acknowledge {queue['claim_ack_s'] * 1000:.2f} ms "
          f"per job, heartbeat {queue['heartbeat_s'] * 1000:.2f} ms each "
          f"(every {heartbeat_every:.0f} s per worker); cores: {os.cpu_count()}")
    if args.json:
        print(json.dumps({"levels": results, "queue": queue}, indent=1))


if __name__ == "__main__":
    main()
