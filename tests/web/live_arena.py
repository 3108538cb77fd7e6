"""A running arena for the pages' browser tests and benchmarks/web.py: `cfarena serve
--http-port` as a subprocess on a database, the four sample bots dialing in over gRPC
(`python -m cfarena.sdk run`), every process in its own process group, stopped by it
(also on failure).

Matches last a few seconds (montecarlo thinks `mc_budget_ms` per decision), so that a
test can open a running match and follow it to its end while others finish.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CFARENA = str(Path(sys.executable).with_name("cfarena"))
POOL = "standard/4p"
SAMPLES = {"random": "cfarena.bots.random_bot", "greedy": "cfarena.bots.greedy",
           "smart": "cfarena.bots.smart", "montecarlo": "cfarena.bots.montecarlo"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def token(name: str) -> str:
    return f"web-test-token-{name}"


@dataclass
class LiveArena:
    """serve and its bots; `url` is the web server's base URL."""

    directory: Path
    db: str
    port: int
    http_port: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        with open(self.directory / f"{name}.err", "wb") as err:
            self.procs[name] = subprocess.Popen(
                argv, cwd=self.directory, stdout=subprocess.DEVNULL, stderr=err,
                env={**os.environ, **(env or {})}, start_new_session=True)

    def err(self, name: str = "serve") -> str:
        return (self.directory / f"{name}.err").read_text(errors="replace")

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
        """(status, body) of a GET on the web server."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as error:
            return int(error.code), bytes(error.read())

    def json(self, path: str) -> Any:
        status, body = self.get(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def wait(self, what: str, condition: Callable[[], object], timeout: float) -> None:
        """Poll `condition` until it is true; fail saying `what` (and serve's log) if serve
        exits or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise AssertionError(f"{what}: {name} exited {proc.returncode}: "
                                         f"{self.err(name)[-3000:]}")
            try:
                if condition():
                    return
            except (OSError, ValueError):
                pass  # the HTTP server not up yet
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: {self.err()[-3000:]}")
            time.sleep(0.2)

    def close(self) -> None:
        """SIGTERM to every process group (bots first), SIGKILL after 10 s."""
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def register(db: str, names: list[str]) -> None:
    """`cfarena bots add NAME --token T --quiet` for every name, in one process."""
    code = ("import sys, typer.main\n"
            "from cfarena.server.cli import app\n"
            "cmd = typer.main.get_command(app)\n"
            "for name in sys.argv[2:]:\n"
            "    cmd.main(['bots', 'add', name, '--token', 'web-test-token-' + name,\n"
            "              '--quiet', '--db', sys.argv[1]], standalone_mode=False)\n")
    subprocess.run([sys.executable, "-c", code, db, *names], check=True, timeout=120)


@contextmanager
def live_arena(directory: Path, db: str, *, rounds: int = 4, mc_budget_ms: int = 120,
               concurrency: int = 2, extra_args: tuple[str, ...] = ()) -> Iterator[LiveArena]:
    """serve on `db` with the four samples playing 4-player standard matches of `rounds`
    rounds, `concurrency` at once (each bot plays them all: capacity = concurrency)."""
    directory.mkdir(parents=True, exist_ok=True)
    register(db, list(SAMPLES))
    arena = LiveArena(directory, db, free_port(), free_port())
    try:
        arena.start("serve", [CFARENA, "serve", "--port", str(arena.port), "--http-port",
                              str(arena.http_port), "--db", db, "--players", "4",
                              "--rule", f"rounds={rounds}", "--concurrency", str(concurrency),
                              *extra_args])
        arena.wait("serve to listen", lambda: "referee listening on" in arena.err(), 60)
        for name, module in SAMPLES.items():
            arena.start(name, [sys.executable, "-m", "cfarena.sdk", "run", module, "--server",
                               f"127.0.0.1:{arena.port}", f"--token={token(name)}",
                               "--capacity", str(concurrency), "--retries", "50", "-q"],
                        {"CFARENA_MC_BUDGET_MS": str(mc_budget_ms)})
        yield arena
    finally:
        arena.close()
