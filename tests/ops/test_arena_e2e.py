"""docker-compose.yml's services as plain processes (this machine has no Docker engine):
a throwaway PostgreSQL cluster, the referee's own commands (`cfarena bots add` x4 with
the tokens, `cfarena serve ... --http-port`) and the four sample bots dialing in with
theirs, all read from docker-compose.yml. The standings fill, /metrics shows the
decisions and matches, and the compose healthcheck says SERVING."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text

from tests.cli.helpers import CFARENA, run_json
from tests.harness.postgres import PgCluster
from tests.harness.serve import Arena

from .metrics_text import scrape, value

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def _compose() -> tuple[list[str], list[list[str]], str, dict[str, tuple[str, str]]]:
    """From docker-compose.yml: the `cfarena bots add` commands, the `cfarena serve`
    command, the healthcheck's Python code and, per bot service, (command, token var)."""
    text = COMPOSE.read_text()
    referee = text.split("  referee:\n", 1)[1].split("\n  bot-", 1)[0]
    block = re.search(r"command:\n(?:.*\n)*?\s+- >\n((?:\s{8}.*\n)+)", referee)
    assert block is not None, "the referee's command block"
    steps = [step.strip() for step in " ".join(block.group(1).split()).split("&&")]
    adds = [step for step in steps if step.startswith("cfarena bots add ")]
    serve = [step for step in steps if step.startswith("exec cfarena serve ")]
    assert len(adds) == 4 and len(serve) == 1, steps
    health = re.search(r"- >-\n((?:\s{10}.*\n)+)", referee)
    assert health is not None, "the referee's healthcheck"
    code = " ".join(line.strip() for line in health.group(1).splitlines())
    bots = {}
    for name, body in re.findall(r"\n  (bot-[a-z]+):\n((?:    .*\n)+)", text):
        command = re.search(r"command: (.*)\n", body)
        token = re.search(r"CFARENA_TOKEN: \$\{([A-Z_]+):", body)
        assert command is not None and token is not None, name
        bots[name] = (command.group(1), token.group(1))
    assert len(bots) == 4, bots
    return adds, [shlex.split(serve[0])[1:]], code, bots


def _each_played(engine: Engine, matches: int) -> bool:
    """Whether each of the 4 bots has at least `matches` finished matches."""
    with engine.connect() as conn:
        played = conn.execute(text(
            "SELECT s.bot_id, count(*) FROM match_seats s JOIN matches m ON m.id = s.match_id"
            " WHERE m.status = 'finished' GROUP BY s.bot_id")).all()
    return len(played) == 4 and all(n >= matches for _bot, n in played)


@pytest.mark.postgres
def test_compose_services_as_processes(tmp_path: Path, pg_cluster: PgCluster) -> None:
    adds, (serve_argv,), health_code, bots = _compose()
    db = pg_cluster.create_database("compose_e2e")
    tokens = {var: f"e2e-{var.lower()}" for _cmd, var in bots.values()}
    env = {**os.environ, "CFARENA_DB": db, **tokens}
    for add in adds:  # the referee's first steps, with the compose's shell quoting
        done = subprocess.run(["sh", "-c", add.replace("$$", "$")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    # `cfarena serve` as the compose runs it, on ports 0 (the ones bound read back from
    # its log); matches shortened to one round so that a few finish in a test's time
    argv = [CFARENA if a == "cfarena" else a for a in serve_argv]
    assert argv[1:2] == ["serve"] and {"50051", "8080"} <= set(argv), argv
    argv = [{"0.0.0.0": "127.0.0.1", "50051": "0", "8080": "0"}.get(a, a) for a in argv]
    arena = Arena(tmp_path, db)
    try:
        arena.start("serve", [*argv, "--rule", "rounds=1"], env)
        bound = arena.listening("serve", http=True)
        port, http_port = bound.bots, bound.http
        for name, (command, var) in bots.items():
            args = shlex.split(command)
            assert args[:4] == ["python", "-m", "cfarena.sdk", "run"], args
            arena.start(name, [sys.executable, *args[1:]],
                        {**env, "CFARENA_SERVER": f"127.0.0.1:{port}", "CFARENA_CAPACITY": "4",
                         "CFARENA_TOKEN": tokens[var]})
        # the compose healthcheck, pointed at this referee
        health = health_code.replace("127.0.0.1:50051", f"127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while True:
            probe = subprocess.run([sys.executable, "-c", health], capture_output=True,
                                   timeout=30)
            if probe.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert probe.returncode == 0, probe.stderr
        # until each bot played 3 matches (a query, not `cfarena standings` every second:
        # its Bradley-Terry fit is seconds of CPU); then the standings once
        engine = create_engine(db)
        try:
            arena.wait("3 finished matches of each bot", lambda: _each_played(engine, 3), 180,
                       ["serve", *bots])
        finally:
            engine.dispose()
        standings: list[dict[str, object]] = run_json(  # type: ignore[assignment]
            "standings", "--pool", "standard/4p", "--db", db, cwd=tmp_path)
        assert {r["bot"] for r in standings} == {"random", "greedy", "smart", "montecarlo"}
        assert all(int(str(r["matches"])) >= 3 for r in standings), standings
        samples = scrape(f"http://127.0.0.1:{http_port}/metrics")
        finished = value(samples, "cfarena_matches_total", status="finished")
        assert finished >= 3
        assert value(samples, "cfarena_decisions_total") > 20 * finished
        assert value(samples, "cfarena_bots_connected") == 4
        assert value(samples, "cfarena_matches_running") >= 0
        serve = arena.procs["serve"]
        for name in [*reversed(bots), "serve"]:
            arena.stop(name)
    finally:
        arena.close()
    assert serve.returncode == 0, arena.err()
