"""`cfarena serve`: a long-running referee that pairs whichever registered bots connect."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import signal
import uuid
from pathlib import Path
from typing import Annotated

import typer

from cfarena.engine import Rules, RulesError
from cfarena.server.cli.common import DbOption, build_rules, database, err, fail
from cfarena.server.referee import (
    MatchRecord,
    RefereeServer,
    SeatingTimeout,
    TimeControl,
    TokenRegistry,
)
from cfarena.server.storage import Database, MatchPlan, MatchStatus
from cfarena.server.storage import MatchRecord as StoredMatch
from cfarena.server.tournament import to_stored

log = logging.getLogger("cfarena.serve")


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
) -> int:
    """Run matches among connected registered bots until stopped; returns matches played."""
    tokens = TokenRegistry()
    ids: dict[str, int] = {}
    for bot in db.list_bots():
        tokens.add_hash(bot.name, bot.token_hash)
        ids[bot.name] = bot.id
    server = RefereeServer(tokens, host=host, port=port)
    await server.start()
    err.print(f"referee listening on {server.address} ({len(ids)} registered bots); "
              "Ctrl-C stops it")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    # Seeds from the OS's CSPRNG: a bot that dials in cannot find its match's seed from
    # its hand, nor predict the next one, and a restart never replays a deal. 62-bit
    # seeds: a repeated deal is as likely as guessing a random 62-bit number.
    rng: random.Random = secrets.SystemRandom() if seed is None else random.Random(seed)
    played = 0
    running: set[asyncio.Task[MatchRecord | None]] = set()
    gate = asyncio.Semaphore(concurrency)

    def store(record: MatchRecord) -> None:
        db.record_match(to_stored(record))

    async def one(match_id: str, seat_bots: list[str], match_seed: int) -> MatchRecord | None:
        try:
            return await server.run_match(match_id, rules, match_seed, seat_bots, time_control,
                                          seat_timeout=5.0, on_record=store)
        except SeatingTimeout as exc:  # a bot left between picking and seating
            log.warning("%s", exc)
            db.record_match(StoredMatch(match_id, status=MatchStatus.ABORTED,
                                        reason=f"not seated: {exc}"))
            return None
        finally:
            gate.release()

    try:
        while not stop.is_set() and (max_matches is None or played < max_matches):
            await gate.acquire()
            table = _pick_table(server.connected_bots(), players, rng)
            if table is None:
                gate.release()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
                continue
            match_seed = rng.getrandbits(62)
            key = f"serve-{uuid.uuid4().hex[:12]}"
            db.schedule_matches(None, [MatchPlan(key, match_seed, rules.to_options(), players,
                                                 [ids[b] for b in table])])
            db.mark_running(key)
            task = asyncio.ensure_future(one(key, table, match_seed))
            running.add(task)
            task.add_done_callback(running.discard)
            played += 1
            await asyncio.sleep(0)  # let it reserve its seats before the next pick
        if running:
            await asyncio.wait(running)
    finally:
        await server.stop(grace=5.0)
    return played


def _pick_table(free: dict[str, int], players: int, rng: random.Random) -> list[str] | None:
    """A random table of distinct bots with a free slot each, or None."""
    ready = sorted(name for name, slots in free.items() if slots > 0)
    if len(ready) < players:
        return None
    table = rng.sample(ready, players)
    return table


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
    db_url: str = DbOption,
) -> None:
    """Serve bots registered with `cfarena bots add`: pair whoever is connected, forever.

    Each match goes to the database (results, logs, ratings in the pool
    "<preset>/<players>p" and "global"). SIGINT/SIGTERM: running matches get
    5 s to finish, then are stored as aborted.
    """
    rule_set = build_rules(rules, rule or [], rules_file)
    try:
        rule_set.resolve(players)
    except RulesError as exc:
        fail(str(exc))
    with database(db_url) as db:
        if not db.list_bots():
            fail("no registered bots: add one with `cfarena bots add NAME`")
        try:
            played = asyncio.run(serve_forever(
                db, rule_set, players, TimeControl(timeout_ms), host, port, concurrency, seed,
                max_matches))
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc}")
    err.print(f"stopped after {played} matches")


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
