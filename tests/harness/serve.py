"""`cfarena serve` and dial-in bots as processes of a test (`Processes`).

serve listens on port 0 (its bots' port, and with `http=True` its HTTP port): the
ports it bound are read back from its log lines ("referee listening on HOST:PORT",
"metrics on http://HOST:PORT/metrics"). Bots dial in with `python -m cfarena.sdk run`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.cli.helpers import CFARENA
from tests.harness.processes import Processes

LISTENING = re.compile(r"referee listening on \S+:(\d+)")
HTTP = re.compile(r"metrics on http://\S+:(\d+)/metrics")
FINISHED = re.compile(r"^match (serve-[0-9a-f]+): \d+\. ", re.M)
SAMPLES = {"random": "cfarena.bots.random_bot", "greedy": "cfarena.bots.greedy",
           "smart": "cfarena.bots.smart", "montecarlo": "cfarena.bots.montecarlo"}


def lost(match_id: str) -> re.Pattern[str]:
    """What a woken arena says of `match_id` when another arena aborted it while it was
    silent (its lease revoked): at its next beat, or, if the match ended first (the woken
    referee charges the seats in play for the freeze: a forfeit may end it at once),
    when the store of its copy is refused. Either way nothing of it is stored."""
    return re.compile(rf"(another arena aborted its match {match_id}|"
                      rf"match {match_id}: its lease is revoked)")


@dataclass(frozen=True)
class Ports:
    """The ports one serve bound: its bots' and its HTTP server's (None: not asked)."""

    bots: int
    http: int | None = None


class Arena(Processes):
    """serve processes and bots of one test (see the module docstring)."""

    def __init__(self, directory: Path, db: str) -> None:
        super().__init__(directory)
        self.db = db
        self.ports: dict[str, Ports] = {}
        self.serves: list[str] = []  # the names of the serve processes started

    def err(self, name: str = "serve") -> str:
        return super().err(name)

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = 30,
             alive: Iterable[str] | None = None) -> None:
        """`wait_for`, failing early if a process named in `alive` (default: every serve
        started and not stopped) exits."""
        names = [n for n in self.serves if n in self.procs] if alive is None else alive
        super().wait(what, condition, timeout, names)

    def serve(self, *args: str, name: str = "serve", http: bool = False,
              port: int = 0, stdout: bool = False) -> Ports:
        """Start `cfarena serve --db DB ARGS` on `port` (0 unless told; and on HTTP port 0
        with `http`), wait until it listens and return the ports it bound."""
        http_args = ["--http-port", "0"] if http else []
        self.serves.append(name)
        self.start(name, [CFARENA, "serve", "--port", str(port), *http_args,
                          "--db", self.db, *args], stdout=stdout)
        return self.listening(name, http)

    def listening(self, name: str = "serve", http: bool = False,
                  timeout: float = 30) -> Ports:
        """Wait until serve `name` listens; the ports it bound (also in `ports`)."""
        self.wait(f"{name} to listen", lambda: LISTENING.search(self.err(name)) is not None
                  and (not http or HTTP.search(self.err(name)) is not None), timeout, (name,))
        bots = LISTENING.search(self.err(name))
        web = HTTP.search(self.err(name)) if http else None
        assert bots is not None
        self.ports[name] = Ports(int(bots[1]), int(web[1]) if web is not None else None)
        return self.ports[name]

    def finished(self, name: str = "serve") -> list[str]:
        """The matches serve `name` logged as finished, in order."""
        return FINISHED.findall(self.err(name))

    def dial_in(self, name: str, module: str, server: str, token: str, *args: str,
                env: dict[str, str] | None = None, stdout: bool = False
                ) -> subprocess.Popen[bytes]:
        """A dial-in bot process (`module`: a name in SAMPLES or a module or file) of
        `server` (HOST:PORT[,HOST:PORT...])."""
        return self.start(name, [sys.executable, "-m", "cfarena.sdk", "run",
                          SAMPLES.get(module, module), "--server", server,
                          f"--token={token}", *args], env, stdout)
