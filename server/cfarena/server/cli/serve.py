"""`cfarena serve`: the competition arena (`cfarena.server.arena`) from the command line.

The arena itself (ladder, token polling, storage off the event loop, shutdown) is
`cfarena.server.arena.Arena`; this module only turns options into an
`ArenaConfig` and results into lines and an exit status.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path
from typing import Annotated

import typer

from cfarena.server.arena import Arena, ArenaConfig, LadderPolicy
from cfarena.server.arena.service import say
from cfarena.server.cli.common import DbOption, build_rules, database, fail
from cfarena.server.referee import TimeControl
from cfarena.server.storage import StorageError


def _port_problem(host: str, port: int) -> str | None:
    """Why HOST:PORT cannot be listened on, from a plain bind (gRPC's own failure is a
    multi-line log), or None. Like gRPC, one address of HOST that binds is enough."""
    if port == 0:
        return None
    try:
        addresses = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return None  # let gRPC resolve it its own way
    problem: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
            return None
        except OSError as exc:
            problem = problem or exc
    if problem is None:
        return None
    if problem.errno == errno.EADDRINUSE:
        return "address already in use"
    return (problem.strerror or str(problem)).lower()


def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port to listen on")] = 50051,
    players: Annotated[int, typer.Option("--players", "-k")] = 4,
    rules: Annotated[str | None, typer.Option("--rules", help="preset [default: standard]")
                     ] = None,
    rules_file: Annotated[Path | None, typer.Option("--rules-file",
                                                    help="TOML/JSON rule options")] = None,
    rule: Annotated[list[str] | None, typer.Option("--rule", help="KEY=VALUE")] = None,
    timeout_ms: Annotated[int, typer.Option("--timeout-ms")] = 1000,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c")] = 4,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="fix the seed of table picks and deals (tests and demos; not for "
        "competitions) [default: the OS's CSPRNG]")] = None,
    max_matches: Annotated[int | None, typer.Option("--max-matches",
                                                    help="stop after this many")] = None,
    starve_after: Annotated[float, typer.Option(
        "--starve-after", help="a bot waiting this many seconds for a match is seated "
        "first")] = 30.0,
    db_url: str = DbOption,
) -> None:
    """Run the competition ladder for bots registered with `cfarena bots add`.

    Bots may be added, rotated and revoked while it runs. Tables are formed from
    the connected bots (fewest games and most uncertain ratings first, similar
    strength, seats balanced). Each match goes to the database (results, logs,
    ratings per bot version in the pool "<preset>/<players>p" and "global");
    while the database is away matches in play are kept and stored when it is back.
    SIGINT/SIGTERM: running matches get 5 s to finish, then are stored as
    aborted; records that cannot be stored within 10 s go to
    cfarena-unsaved-<timestamp>.jsonl (exit 1).
    """
    if not 0 <= port <= 65535:
        fail(f"--port must be 0-65535, got {port}")
    if concurrency < 1:
        fail(f"--concurrency must be at least 1, got {concurrency}")
    if starve_after < 0:
        fail(f"--starve-after must be 0 or more, got {starve_after:g}")
    rule_set = build_rules(rules, rule or [], rules_file, players)
    config = ArenaConfig(
        rules=rule_set, players=players, time_control=TimeControl(timeout_ms), host=host,
        port=port, concurrency=concurrency, seed=seed, max_matches=max_matches,
        ladder=LadderPolicy(starve_after_s=starve_after),
    )
    with database(db_url) as db:
        if not db.list_bots():
            fail("no registered bots: add one with `cfarena bots add NAME`")
        problem = _port_problem(host, port)
        if problem is not None:
            fail(f"cannot listen on {host}:{port}: {problem}")
        try:
            result = asyncio.run(Arena(db, config).run())
        except (OSError, StorageError) as exc:
            fail(str(exc))
    aborted = f" ({result.aborted} aborted)" if result.aborted else ""
    say(f"stopped after {result.finished} match{'' if result.finished == 1 else 'es'}"
        f"{aborted}")
    if result.unsaved is not None:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
