"""`cfarena serve`: a long-running referee that pairs whichever registered bots connect.

Nothing a bot or a fault does stops it or loses a match:

- a table is picked only among bots with a free connection, seated, and only
  then scheduled in the database (a table that cannot be seated or scheduled is
  not started, and picked again later);
- finished matches are stored by a `MatchWriter` (in a worker thread, in order,
  retrying while the database is away), never on the event loop;
- SIGINT/SIGTERM: running matches get 5 s, then are stored as aborted; every bot
  stream is ended with the shutdown status; what could not be stored within
  10 s is written to `cfarena-unsaved-<timestamp>.jsonl` in the working directory;
- on start, matches outside any tournament left `running` by a referee that was
  killed are marked aborted ("referee stopped").
"""

from __future__ import annotations

import asyncio
import errno
import random
import secrets
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from cfarena.engine import Rules, RulesError
from cfarena.server.cli.common import DbOption, build_rules, database, fail
from cfarena.server.match_writer import MatchWriter, dump_unsaved, is_outage
from cfarena.server.ops import OpsConfig, operations
from cfarena.server.referee import (
    MatchRecord,
    RefereeServer,
    SeatingTimeout,
    TimeControl,
    TokenRegistry,
)
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.server import ShuttingDown
from cfarena.server.referee.transport import ServerTls, TlsError
from cfarena.server.storage import Database, MatchPlan, MatchStatus, StoredMatch
from cfarena.server.tournament import to_stored

STOPPED = "referee stopped"  # the reason of matches a stopped referee could not finish
STOP_GRACE_S = 5.0  # running matches get this long to finish on SIGINT/SIGTERM
FLUSH_TIMEOUT_S = 10.0  # then the writer gets this long to store what is queued
IDLE_POLL_S = 0.1  # no table to start: look again after this long
SCHEDULE_RETRY_S = (0.5, 5.0)  # scheduling failed: first retry, then doubling to


def say(line: str) -> None:
    """One line for the organiser watching the terminal (stderr)."""
    print(line, file=sys.stderr, flush=True)


@dataclass
class ServeResult:
    finished: int = 0  # matches played to the end
    aborted: int = 0  # matches stored as aborted (cut off by the stop, referee errors)
    unsaved: Path | None = None  # where the records that could not be stored went


async def serve_forever(
    db: Database,
    rules: Rules,
    players: int,
    time_control: TimeControl,
    host: str,
    port: int,
    concurrency: int,
    seed: int | None,
    max_matches: int | None = None,
    *,
    unsaved_dir: Path | None = None,
    report: Callable[[str], None] = say,
    ops_config: OpsConfig | None = None,
) -> ServeResult:
    """Run matches among connected registered bots until stopped (or `max_matches` were
    started and are over). OSError when it cannot listen."""
    tokens = TokenRegistry()
    ids: dict[str, int] = {}
    for bot in db.list_bots():
        tokens.add_hash(bot.name, bot.token_hash)
        ids[bot.name] = bot.id
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with operations(ops_config or OpsConfig(), report) as ops:  # metrics, the HTTP server
        server = RefereeServer(tokens, host=host, port=port, **ops.referee_options())
        await server.start()
        return await _serve(server, db, ids, stop, rules, players, time_control, concurrency,
                            seed, max_matches, unsaved_dir, report)


async def _serve(server: RefereeServer, db: Database, ids: dict[str, int],
                 stop: asyncio.Event, rules: Rules, players: int, time_control: TimeControl,
                 concurrency: int, seed: int | None, max_matches: int | None,
                 unsaved_dir: Path | None, report: Callable[[str], None]) -> ServeResult:
    writer = MatchWriter(db, report)
    writer.start()
    result = ServeResult()
    try:
        try:
            # only once it holds the port: a `serve` refused for a port in use (another
            # one, maybe on this database) must not touch the matches in play
            stale = await asyncio.to_thread(db.abort_running_matches, STOPPED)
            if stale:
                report(f"{stale} match{'' if stale == 1 else 'es'} left running by a "
                       f"stopped referee marked aborted ({STOPPED!r})")
            report(f"referee listening on {server.address} ({len(ids)} registered bots); "
                   "Ctrl-C stops it")
            await _play_matches(stop, db, server, writer, result, ids, rules, players,
                                time_control, concurrency, seed, max_matches, report)
        finally:
            await server.stop(grace=0)  # done already, unless something failed before
    finally:
        left = await writer.close(FLUSH_TIMEOUT_S)
        if left:
            result.unsaved = _keep_unsaved(left, unsaved_dir or Path.cwd(), report)
    return result


def _keep_unsaved(records: list[StoredMatch], directory: Path,
                  report: Callable[[str], None]) -> Path:
    """Write the records the database did not take to a file (in `directory`, else in
    the temp dir) and say where; the file's path."""
    what = f"{len(records)} match record{'' if len(records) == 1 else 's'}"
    problem: OSError | None = None
    for where in (directory, Path(tempfile.gettempdir())):
        try:
            path = dump_unsaved(records, where)
        except OSError as exc:
            problem = problem or exc
            continue
        report(f"error: could not store {what}; written to {path}")
        return path
    report(f"error: could not store {what}, nor write them to a file: {problem}")
    return directory


async def _play_matches(
    stop: asyncio.Event,
    db: Database,
    server: RefereeServer,
    writer: MatchWriter,
    result: ServeResult,
    ids: dict[str, int],
    rules: Rules,
    players: int,
    time_control: TimeControl,
    concurrency: int,
    seed: int | None,
    max_matches: int | None,
    report: Callable[[str], None],
) -> None:
    loop = asyncio.get_running_loop()
    stopping = loop.create_task(stop.wait())
    # Seeds from the OS's CSPRNG: a bot that dials in cannot find its match's seed from
    # its hand, nor predict the next one, and a restart never replays a deal. 62-bit
    # seeds: a repeated deal is as likely as guessing a random 62-bit number.
    rng: random.Random = secrets.SystemRandom() if seed is None else random.Random(seed)
    options = rules.to_options()
    running: set[asyncio.Task[None]] = set()
    started = 0
    retry = SCHEDULE_RETRY_S[0]

    def on_record(record: MatchRecord) -> None:  # every match, finished or aborted, once
        writer.submit(to_stored(record))
        if record.status is MatchStatus.FINISHED:
            result.finished += 1
        else:
            result.aborted += 1
        report(describe(record))

    async def play(key: str, table: list[str], match_seed: int,
                   conns: list[BotConnection]) -> None:
        try:
            await server.run_match(key, rules, match_seed, table, time_control,
                                   connections=conns, on_record=on_record)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            # the stop cut the match off: on_record has queued it as aborted
        except ShuttingDown:  # never seated: store it as not played
            _release(conns, key)
            result.aborted += 1
            writer.submit(StoredMatch(key, status=MatchStatus.ABORTED, reason=STOPPED))
        except Exception as exc:  # a referee bug: on_record has queued it as aborted
            report(f"error: match {key}: {type(exc).__name__}: {exc}")

    async def pause(seconds: float) -> None:
        await asyncio.wait({stopping}, timeout=seconds)

    try:
        while not stop.is_set() and (max_matches is None or started < max_matches):
            if len(running) >= concurrency:
                await asyncio.wait({*running, stopping}, return_when=asyncio.FIRST_COMPLETED)
                continue
            table = _pick_table(server.connected_bots(), players, rng)
            if table is None:
                await pause(IDLE_POLL_S)
                continue
            key = f"serve-{uuid.uuid4().hex[:12]}"
            try:  # the picked bots have free connections: this reserves them at once
                conns = await server.seat(key, table, timeout=IDLE_POLL_S)
            except SeatingTimeout:  # one left meanwhile: nothing stored, pick again
                continue
            match_seed = rng.getrandbits(62)
            plan = MatchPlan(key, match_seed, options, players, [ids[b] for b in table])
            try:
                await writer.call(db.schedule_matches, None, [plan])
            except Exception as exc:  # the database away (or refusing): not started
                _release(conns, key)
                if not is_outage(exc):
                    report(f"error: cannot schedule a match: {exc}")
                await pause(retry)
                retry = min(retry * 2, SCHEDULE_RETRY_S[1])
                continue
            retry = SCHEDULE_RETRY_S[0]
            try:
                await writer.call(db.mark_running, key)
            except Exception as exc:  # stored, but not as started: not played at all
                _release(conns, key)
                if not is_outage(exc):
                    report(f"error: cannot start match {key}: {exc}")
                writer.submit(StoredMatch(key, status=MatchStatus.ABORTED,
                                          reason=f"not started: {exc}"))
                await pause(retry)
                continue
            task = loop.create_task(play(key, table, match_seed, conns))
            running.add(task)
            task.add_done_callback(running.discard)
            started += 1
            await asyncio.sleep(0)  # it starts now: a stop from here on lets it finish
        while running and not stop.is_set():  # --max-matches: let them finish
            await asyncio.wait({*running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # a second Ctrl-C while stopping is ignored (not a KeyboardInterrupt traceback)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda: None)
        # running matches get STOP_GRACE_S, then are cut off (on_record: aborted);
        # every bot is told the referee is shutting down
        await server.stop(grace=STOP_GRACE_S)
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        stopping.cancel()
        await asyncio.gather(stopping, return_exceptions=True)


def _release(conns: Sequence[BotConnection], key: str) -> None:
    """Give back seats reserved for a match that is not going to be played."""
    for conn in conns:
        conn.matches.pop(key, None)


def describe(record: MatchRecord) -> str:
    """One line per match for the terminal: its key, then per seat (in seat order)
    the rank, bot and total, and the number of rounds (or why it was aborted)."""
    if record.status is not MatchStatus.FINISHED:
        return f"match {record.match_id} aborted: {record.reason}"
    seats = []
    for seat, bot in enumerate(record.seat_bots):
        forfeit = " (forfeited)" if seat in record.forfeited else ""
        seats.append(f"{record.ranks[seat]}. {bot} {record.totals[seat]}{forfeit}")
    rounds = len(record.round_scores)
    return (f"match {record.match_id}: {', '.join(seats)} "
            f"({rounds} round{'' if rounds == 1 else 's'})")


def _pick_table(free: dict[str, int], players: int, rng: random.Random) -> list[str] | None:
    """A random table of distinct bots with a free slot each, or None."""
    ready = sorted(name for name, slots in free.items() if slots > 0)
    if len(ready) < players:
        return None
    table = rng.sample(ready, players)
    return table


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
    # operations (docs/OPERATIONS.md)
    tls_cert: Annotated[Path | None, typer.Option(
        "--tls-cert", help="serve the bots' port over TLS with this PEM certificate chain "
        "(with --tls-key)")] = None,
    tls_key: Annotated[Path | None, typer.Option(
        "--tls-key", help="the PEM private key of --tls-cert")] = None,
    http_port: Annotated[int | None, typer.Option(
        "--http-port", help="serve Prometheus metrics at http://HTTP_HOST:PORT/metrics "
        "[default: no HTTP server]")] = None,
    http_host: Annotated[str | None, typer.Option(
        "--http-host", help="address of the HTTP server [default: --host]")] = None,
    db_url: str = DbOption,
) -> None:
    """Serve bots registered with `cfarena bots add`: pair whoever is connected, forever.

    Each match goes to the database (results, logs, ratings in the pool
    "<preset>/<players>p" and "global"); while the database is away matches
    in play are kept and stored when it is back. SIGINT/SIGTERM: running
    matches get 5 s to finish, then are stored as aborted; records that cannot
    be stored within 10 s go to cfarena-unsaved-<timestamp>.jsonl (exit 1).
    """
    if not 0 <= port <= 65535:
        fail(f"--port must be 0-65535, got {port}")
    if concurrency < 1:
        fail(f"--concurrency must be at least 1, got {concurrency}")
    ops_config = _ops_config(tls_cert, tls_key, http_host or host, http_port)
    rule_set = build_rules(rules, rule or [], rules_file)
    try:
        rule_set.resolve(players)
    except RulesError as exc:
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
            result = asyncio.run(serve_forever(
                db, rule_set, players, TimeControl(timeout_ms), host, port, concurrency, seed,
                max_matches, ops_config=ops_config))
        except OSError as exc:
            fail(str(exc))
    aborted = f" ({result.aborted} aborted)" if result.aborted else ""
    say(f"stopped after {result.finished} match{'' if result.finished == 1 else 'es'}"
        f"{aborted}")
    if result.unsaved is not None:
        raise typer.Exit(1)


def _ops_config(tls_cert: Path | None, tls_key: Path | None, http_host: str,
                http_port: int | None) -> OpsConfig:
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
    return OpsConfig(tls=tls, http_host=http_host, http_port=http_port)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
