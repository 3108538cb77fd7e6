"""`cfarena serve` with TLS on the bots' port and Prometheus metrics on --http-port:
real processes (serve, SDK bots), a certificate made in the test."""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cfarena.sdk.cli import main as sdk_main
from tests.cli.helpers import run_in_process
from tests.harness.ports import busy_port
from tests.harness.serve import Arena

from .metrics_text import scrape, value
from .tls import self_signed


def _sdk(*args: str) -> list[str]:
    return [sys.executable, "-m", "cfarena.sdk", "run", *args]


def _scrape_until(http_port: int, done: threading.Event,
                  scrapes: list[tuple[float, float, float]]) -> None:
    """Scrape /metrics every 10 ms until `done`: (matches ended, running, decisions)."""
    while not done.is_set():
        try:
            now = scrape(f"http://127.0.0.1:{http_port}/metrics")
        except OSError:  # not listening yet
            time.sleep(0.1)
            continue
        scrapes.append((value(now, "cfarena_matches_total", status="finished")
                        + value(now, "cfarena_matches_total", status="aborted"),
                        value(now, "cfarena_matches_running"),
                        value(now, "cfarena_decisions_total")))
        time.sleep(0.01)


def _stored_finished(db: Path) -> int:
    """The finished matches stored in the SQLite file `db` (0 before its schema)."""
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
            return int(conn.execute(
                "select count(*) from matches where status = 'finished'").fetchone()[0])
    except sqlite3.OperationalError:  # no schema yet
        return 0


def test_tls_bots_play_plaintext_is_refused_and_metrics_count(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    for name in ("a", "b"):
        assert run_in_process("bots", "add", name, "--token", f"secret-{name}", "--db", db,
                              cwd=tmp_path).returncode == 0
    arena = Arena(tmp_path, db)
    try:
        bound = arena.serve("--players", "2", "--rule", "rounds=1", "--tls-cert", str(cert),
                            "--tls-key", str(key), http=True)
        assert bound.http is not None
        serve, http_port = arena.procs["serve"], bound.http
        server = f"127.0.0.1:{bound.bots}"
        # the CA by option for one bot, by environment variable for the other
        arena.dial_in("a", "greedy", server, "secret-a", "--tls-ca", str(cert), "--retries",
                      "50")
        arena.dial_in("b", "random", server, "secret-b", "--retries", "50",
                      env={"CFARENA_TLS_CA": str(cert)})
        # /metrics while matches are played: a running count of decisions would tell
        # anyone who reads it what the public events hide (a kept drawn tile that fits
        # is a decision, a forced pass is not), so it moves only when a match ends
        scrapes: list[tuple[float, float, float]] = []  # (ended, running, decisions)
        done = threading.Event()
        scraper = threading.Thread(target=_scrape_until, args=(http_port, done, scrapes))
        scraper.start()

        def during() -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
            """Pairs of scrapes one after the other with a match running, none ended."""
            return [(a, b) for a, b in itertools.pairwise(list(scrapes))
                    if a[1] and b[1] and a[0] == b[0]]

        try:  # (a loaded machine scrapes less often: wait for the scrapes too)
            arena.wait("3 stored matches, 5 scrapes in play",
                       lambda: _stored_finished(tmp_path / "arena.db") >= 3
                       and len(during()) >= 5, 90)
        finally:
            done.set()
            scraper.join()
        assert len(during()) >= 5, sorted(set(scrapes))  # the scrapes saw matches in play
        assert all(a[2] == b[2] for a, b in during()), during()

        # a plaintext client is refused (the TLS handshake never happens): it gives up
        plain = subprocess.run(
            _sdk("cfarena.bots.random_bot", "--server", server, "--token", "secret-a",
                 "--retries", "0"),
            cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert plain.returncode == 1, plain.stderr
        assert "UNAVAILABLE" in plain.stderr and "connected to" not in plain.stderr

        samples = scrape(f"http://127.0.0.1:{http_port}/metrics")
        assert value(samples, "cfarena_decisions_total") > 10
        assert value(samples, "cfarena_matches_total", status="finished") >= 2
        assert value(samples, "cfarena_bots_connected") == 2
        assert value(samples, "cfarena_bot_connections") == 2
        assert value(samples, "cfarena_matches_running") in (0, 1)
        assert value(samples, "cfarena_faults_total", kind="timeout") == 0
        count = value(samples, "cfarena_decision_seconds_count")
        assert count == value(samples, "cfarena_decision_seconds_bucket", le="+Inf")
        assert count == value(samples, "cfarena_decisions_total")
        assert 0 < value(samples, "cfarena_decision_seconds_sum") < count  # < 1 s each
        for name in ("b", "a", "serve"):
            arena.stop(name)
    finally:
        arena.close()
    assert serve.returncode == 0, arena.err()
    log = arena.err()
    assert f"metrics on http://127.0.0.1:{http_port}/metrics" in log


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_tls_and_http_option_errors_are_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    assert run_in_process("bots", "add", "a", "--db", db, "--quiet",
                          cwd=tmp_path).returncode == 0
    cert, key = self_signed(tmp_path)
    (tmp_path / "not-pem.txt").write_text("hello\n")
    unreadable = tmp_path / "secret.pem"
    unreadable.write_bytes(key.read_bytes())
    unreadable.chmod(0)
    cases = [
        (["--tls-cert", str(cert)], ["--tls-cert and --tls-key go together"]),
        (["--tls-key", str(key)], ["--tls-cert and --tls-key go together"]),
        (["--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", str(key)],
         ["--tls-cert", "nope.pem: no such file"]),
        (["--tls-cert", str(cert), "--tls-key", str(tmp_path / "not-pem.txt")],
         ["--tls-key", "not a PEM file with a private key"]),
        (["--tls-cert", str(key), "--tls-key", str(key)],
         ["--tls-cert", "not a PEM file with a certificate"]),
        (["--tls-cert", str(tmp_path), "--tls-key", str(key)], ["is a directory"]),
        (["--http-port", "70000"], ["--http-port must be 0-65535, got 70000"]),
    ]
    if os.geteuid() != 0:  # root reads any file
        cases.append((["--tls-cert", str(cert), "--tls-key", str(unreadable)],
                      ["--tls-key", "cannot read it: permission denied"]))
    for args, needles in cases:
        _one_line_error(run_in_process("serve", "--port", "0", *args, "--db", db,
                                       cwd=tmp_path), *needles)
    # the HTTP port in use
    with busy_port() as used:
        _one_line_error(run_in_process("serve", "--port", "0", "--http-port", str(used),
                                       "--db", db, cwd=tmp_path),
                        f"cannot listen on 127.0.0.1:{used}: address already in use")


def test_sdk_tls_ca_errors_are_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """In process (`cfarena.sdk.cli.main`): a usage error is refused before any
    connection, no process behaviour is under test."""
    (tmp_path / "junk.pem").write_text("junk\n")
    for args, env, needle in [
        (["--tls-ca", str(tmp_path / "nope.pem")], {}, "--tls-ca"),
        (["--tls-ca", str(tmp_path / "junk.pem")], {}, "not a PEM certificate"),
        ([], {"CFARENA_TLS_CA": str(tmp_path / "nope.pem")}, "CFARENA_TLS_CA"),
    ]:
        with monkeypatch.context() as patched:
            for name, value in env.items():
                patched.setenv(name, value)
            status = sdk_main(["run", "cfarena.bots.random_bot", "--server", "127.0.0.1:1",
                               "--token", "t", *args])
        stderr = capsys.readouterr().err
        assert status == 2, stderr
        assert needle in stderr and stderr.count("\n") == 1, stderr
