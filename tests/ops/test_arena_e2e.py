"""docker-compose.yml's services as plain processes (this machine has no Docker engine):
a throwaway PostgreSQL cluster, the image's entrypoint (docker/entrypoint.sh) making
the secrets (`init`), registering the house bots with their generated tokens and
starting `cfarena serve` with the admin token file (`serve`), and the four sample bots
dialing in with theirs (`bot`), each with the arguments docker-compose.yml gives it.
The standings fill, /metrics shows the decisions and matches, and the compose
healthcheck says SERVING."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text

from tests.cli.helpers import run_json
from tests.harness.postgres import PgCluster
from tests.harness.serve import Arena

from .compose import ENTRYPOINT, services
from .metrics_text import scrape, value


def _post(url: str, token: str) -> int:
    """The status of an empty POST with `token` as its bearer."""
    ask = urllib.request.Request(url, method="POST", data=b"",
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(ask, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _each_played(engine: Engine, matches: int) -> bool:
    """Whether each of the 4 bots has at least `matches` finished matches."""
    with engine.connect() as conn:
        played = conn.execute(text(
            "SELECT s.bot_id, count(*) FROM match_seats s JOIN matches m ON m.id = s.match_id"
            " WHERE m.status = 'finished' GROUP BY s.bot_id")).all()
    return len(played) == 4 and all(n >= matches for _bot, n in played)


@pytest.mark.postgres
def test_compose_services_as_processes(tmp_path: Path, pg_cluster: PgCluster) -> None:
    found = services()
    db = pg_cluster.create_database("compose_e2e")
    secrets = tmp_path / "secrets"
    # the image's PATH: cfarena and python3 are this environment's
    env = {**os.environ, "CFARENA_SECRETS": str(secrets), "CFARENA_POSTGRES_UID":
           str(os.getuid()), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    made = subprocess.run(["sh", str(ENTRYPOINT), *found["secrets"]["command"]], env=env,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    # `serve` as the compose runs it, on ports 0 (the ones bound read back from its log),
    # on the test's database; matches shortened to one round (and montecarlo's thinking
    # below) so a few finish in time
    serve_argv = found["referee"]["command"]
    assert serve_argv[0] == "serve", serve_argv
    arena = Arena(tmp_path, db)
    try:
        arena.start("serve", ["sh", str(ENTRYPOINT), *serve_argv, "--rule", "rounds=1"],
                    {**env, "CFARENA_DB": db, "CFARENA_HOST": "127.0.0.1", "CFARENA_PORT": "0",
                     "CFARENA_HTTP_HOST": "127.0.0.1", "CFARENA_HTTP_PORT": "0"})
        bound = arena.listening("serve", http=True, timeout=120)  # after four `bots add`
        port, http_port = bound.bots, bound.http
        bots = {name: s for name, s in found.items() if name.startswith("bot-")}
        for name, service in bots.items():  # montecarlo thinks 2 ms a decision, not 50
            arena.start(name, ["sh", str(ENTRYPOINT), *service["command"]],
                        {**env, **service["environment"], "CFARENA_MC_BUDGET_MS": "2",
                         "CFARENA_SERVER": f"127.0.0.1:{port}"})
        # the compose healthcheck, pointed at this referee
        health = found["referee"]["healthcheck"]["test"][-1].replace(
            "127.0.0.1:50051", f"127.0.0.1:{port}")
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
            "standings", "--pool", "standard/4p", "--db", db, cwd=tmp_path, in_process=True)
        assert {r["bot"] for r in standings} == {"random", "greedy", "smart", "montecarlo"}
        assert all(int(str(r["matches"])) >= 3 for r in standings), standings
        samples = scrape(f"http://127.0.0.1:{http_port}/metrics")
        finished = value(samples, "cfarena_matches_total", status="finished")
        assert finished >= 3
        assert value(samples, "cfarena_decisions_total") > 20 * finished
        assert value(samples, "cfarena_bots_connected") == 4
        assert value(samples, "cfarena_matches_running") >= 0
        # the web API's admin actions take the generated admin token, and only it
        admin = (secrets / "admin.token").read_text().strip()
        assert len(admin) >= 40
        for token, status in [("not-the-admin-token", 401), (admin, 200)]:
            assert _post(f"http://127.0.0.1:{http_port}/api/admin/ladder/resume",
                         token) == status
        serve = arena.procs["serve"]
        for name in [*reversed(bots), "serve"]:
            arena.stop(name)
    finally:
        arena.close()
    assert serve.returncode == 0, arena.err()
