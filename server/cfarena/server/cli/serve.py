"""`cfarena serve`: the competition arena (`cfarena.server.arena`) from the command line.

The arena itself (ladder, token polling, storage off the event loop, shutdown) is
`cfarena.server.arena.Arena`, wired to its operations side and the web page by
`cfarena.server.serve_assembly`; this module only turns options into an `ArenaConfig`
and an `OpsConfig`, and results into lines and an exit status.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from cfarena.server.arena import ArenaConfig, LadderPolicy
from cfarena.server.arena.service import say
from cfarena.server.cli.common import (
    DbOption,
    build_rules,
    check_seed,
    check_time_control,
    database,
    fail,
)
from cfarena.server.credentials import AdminTokenError, read_admin_token
from cfarena.server.ops import OpsConfig
from cfarena.server.referee import TimeControl
from cfarena.server.referee.transport import ServerTls, TlsError
from cfarena.server.serve_assembly import run_serve
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
    dead_after: Annotated[float, typer.Option(
        "--dead-after", help="several arenas on one database: one not heard of for this "
        "many seconds is dead, and its unfinished matches are marked aborted (it beats "
        "every second)")] = 10.0,
    flush_timeout: Annotated[float, typer.Option(
        "--flush-timeout", help="on SIGINT/SIGTERM, seconds the records not stored yet "
        "(the database away) may wait for it before they go to an unsaved file")] = 10.0,
    # operations (docs/OPERATIONS.md)
    tls_cert: Annotated[Path | None, typer.Option(
        "--tls-cert", help="serve the bots' port over TLS with this PEM certificate chain "
        "(with --tls-key)")] = None,
    tls_key: Annotated[Path | None, typer.Option(
        "--tls-key", help="the PEM private key of --tls-cert")] = None,
    http_port: Annotated[int | None, typer.Option(
        "--http-port", help="serve the web page and JSON API at http://HTTP_HOST:PORT/ "
        "and Prometheus metrics at /metrics [default: no HTTP server]")] = None,
    http_host: Annotated[str | None, typer.Option(
        "--http-host", help="address of the HTTP server [default: --host]")] = None,
    trusted_proxy: Annotated[list[str] | None, typer.Option(
        "--trusted-proxy", help="a reverse proxy (address or network, repeatable) whose "
        "X-Forwarded-For names the client; the web's per-client limits count that "
        "address [default: none: every client is its peer address]")] = None,
    admin_token_file: Annotated[Path | None, typer.Option(
        "--admin-token-file", help="a file holding the web API's admin token (16 "
        "characters or more) [default: no admin actions]")] = None,
    db_url: str = DbOption,
) -> None:
    """Run the competition ladder for bots registered with `cfarena bots add`.

    Bots may be added, rotated and revoked while it runs. Tables are formed from
    the connected bots (fewest games and most uncertain ratings first, similar
    strength, seats balanced). Each match goes to the database (results, logs,
    ratings per bot version in the pool "<preset>/<players>p" and "global");
    while the database is away matches in play are kept and stored when it is back.
    SIGINT/SIGTERM: running matches get 5 s to finish, then are stored as
    aborted; records that cannot be stored within 10 s (--flush-timeout) go to
    cfarena-unsaved-<timestamp>.jsonl (exit 1). Several `serve` processes may share
    one PostgreSQL database (docs/ARENA.md, "Running on several machines").
    """
    if not 0 <= port <= 65535:
        fail(f"--port must be 0-65535, got {port}")
    if concurrency < 1:
        fail(f"--concurrency must be at least 1, got {concurrency}")
    if starve_after < 0:
        fail(f"--starve-after must be 0 or more, got {starve_after:g}")
    if not dead_after >= 3:  # a few missed beats (one a second) are not a death
        fail(f"--dead-after must be at least 3 seconds, got {dead_after:g}")
    if not flush_timeout >= 0:
        fail(f"--flush-timeout must be 0 or more, got {flush_timeout:g}")
    check_seed(seed)
    check_time_control(timeout_ms)
    rule_set = build_rules(rules, rule or [], rules_file, players)
    config = ArenaConfig(
        rules=rule_set, players=players, time_control=TimeControl(timeout_ms), host=host,
        port=port, concurrency=concurrency, seed=seed, max_matches=max_matches,
        ladder=LadderPolicy(starve_after_s=starve_after), stale_s=dead_after,
        flush_s=flush_timeout,
    )
    ops_config = _ops_config(tls_cert, tls_key, http_host or host, http_port,
                             trusted_proxy or [])
    admin_token = None
    if admin_token_file is not None:
        if http_port is None:
            fail("--admin-token-file needs --http-port")
        try:
            admin_token = read_admin_token(admin_token_file)
        except AdminTokenError as exc:
            fail(str(exc))
    with database(db_url) as db:
        if not db.list_bots():
            fail("no registered bots: add one with `cfarena bots add NAME`")
        problem = _port_problem(host, port)
        if problem is not None:
            fail(f"cannot listen on {host}:{port}: {problem}")
        if ops_config.http_port is not None:
            problem = _port_problem(ops_config.http_host, ops_config.http_port)
            if problem is not None:
                fail(f"cannot listen on {ops_config.http_host}:{ops_config.http_port}: "
                     f"{problem}")
        try:
            result = asyncio.run(run_serve(db, config, ops_config, admin_token))
        except (OSError, StorageError) as exc:
            fail(str(exc))
    aborted = f" ({result.aborted} aborted)" if result.aborted else ""
    say(f"stopped after {result.finished} match{'' if result.finished == 1 else 'es'}"
        f"{aborted}")
    if result.unsaved is not None:
        raise typer.Exit(1)


def _ops_config(tls_cert: Path | None, tls_key: Path | None, http_host: str,
                http_port: int | None, trusted_proxies: Sequence[str] = ()) -> OpsConfig:
    """The operations options, checked (a one-line usage error for any problem)."""
    if (tls_cert is None) != (tls_key is None):
        fail("--tls-cert and --tls-key go together")
    tls = None
    if tls_cert is not None and tls_key is not None:
        try:
            tls = ServerTls.load(tls_cert, tls_key)
        except TlsError as exc:
            fail(str(exc))
    if http_port is not None and not 0 <= http_port <= 65535:
        fail(f"--http-port must be 0-65535, got {http_port}")
    proxies = []
    for proxy in trusted_proxies:
        try:
            proxies.append(str(ipaddress.ip_network(proxy.strip(), strict=False)))
        except ValueError:
            fail(f"--trusted-proxy {proxy!r}: not an IP address or network")
    if proxies and http_port is None:
        fail("--trusted-proxy needs --http-port")
    return OpsConfig(tls=tls, http_host=http_host, http_port=http_port,
                     trusted_proxies=tuple(proxies))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
