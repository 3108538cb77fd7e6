"""`cfarena worker`: take tournament match jobs from PostgreSQL and play them here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from cfarena.server.cli.common import (
    DbOption,
    check_connect_timeout,
    check_id,
    database,
    err,
    fail,
    make_log_dir,
)
from cfarena.server.sandbox import exposed, python_paths, sandbox_problem
from cfarena.server.storage import Database, StorageError
from cfarena.server.tournament.config import missing_defences
from cfarena.server.tournament.job_queue import install_schema, uses_queue
from cfarena.server.tournament.pool import Launch

# after a first Ctrl-C or SIGTERM, how long the matches in play may take to finish
STOP_GRACE_S = 2.0

if TYPE_CHECKING:  # imported by the command (procrastinate takes ~0.2 s to import)
    from cfarena.server.tournament.worker import WorkerOptions, WorkerStats


def worker_cmd(
    db_url: str = DbOption,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c",
                                             help="matches at once on this machine")] = 2,
    tournament: Annotated[int | None, typer.Option(
        "--tournament", "-t", help="only this tournament's matches [default: any]")] = None,
    until_done: Annotated[bool, typer.Option(
        "--until-done", help="exit once no match job is waiting or running (else: run until "
        "Ctrl-C or SIGTERM: the matches in play get 2 s to finish, then go back to the "
        "queue; exit status 130 or 143)")] = False,
    heartbeat_s: Annotated[float, typer.Option(
        "--heartbeat-s", help="seconds between this worker's heartbeats")] = 2.0,
    stalled_s: Annotated[float, typer.Option(
        "--stalled-after-s", help="a worker silent this long is taken for dead and its "
        "matches are played again by others (use the same value on every machine)")] = 10.0,
    poll_s: Annotated[float, typer.Option(
        "--poll-s", help="seconds between an idle worker's looks for jobs (and a job "
        "taken before its phase opened waits this long to be tried again)")] = 1.0,
    sandbox_bind: Annotated[list[Path] | None, typer.Option(
        "--sandbox-bind", help="a file or directory every bot may read (repeatable)")] = None,
    connect_timeout: Annotated[float, typer.Option(
        "--connect-timeout", help="seconds a bot may take to connect")] = 30.0,
    log_dir: Annotated[Path | None, typer.Option(
        "--log-dir", help="also write each seat's output here")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print what it did as JSON")
                        ] = False,
) -> None:
    """Play tournament matches from a PostgreSQL database, on this machine's referee with
    its own sandboxed bot processes (the bots' commands must exist here). Start as many
    as you like, on any machines; kill one and its matches are played again by another."""
    if concurrency < 1:
        fail(f"--concurrency must be at least 1, got {concurrency}")
    check_connect_timeout(connect_timeout)
    if heartbeat_s <= 0 or stalled_s <= 2 * heartbeat_s:
        fail("--stalled-after-s must be more than twice --heartbeat-s (and both positive)")
    if poll_s <= 0:
        fail(f"--poll-s must be positive, got {poll_s:g}")
    for path in sandbox_bind or []:
        if not path.exists():
            fail(f"--sandbox-bind: no such file or directory: {path}")
    if log_dir is not None:
        # what every sandbox is shown, whatever its bot (a bot's own paths: at its job)
        shown = [*python_paths(), *(p.resolve() for p in sandbox_bind or [])]
        found = exposed(shown, [log_dir.resolve()])
        if found is not None:
            fail(escape(f"--log-dir: every bot would be able to read {found[0]} (it is "
                        f"shown {found[1]}): keep it outside the system directories, "
                        "Python's and the --sandbox-bind paths"))
        make_log_dir(log_dir)
    check_id("--tournament", tournament)
    from cfarena.server.tournament.worker import WorkerOptions

    options = WorkerOptions(concurrency=concurrency, heartbeat_s=heartbeat_s,
                            stalled_s=stalled_s, poll_s=poll_s,
                            binds=tuple(p.resolve() for p in sandbox_bind or []),
                            connect_timeout=connect_timeout, log_dir=log_dir)
    with database(db_url) as db:
        if not uses_queue(db.engine):
            fail("cfarena worker needs a PostgreSQL database (--db postgresql://...); on "
                 "SQLite run-tournament plays its matches itself")
        if tournament is not None and db.get_tournament(tournament) is None:
            fail(f"no tournament {tournament}")
        problem = sandbox_problem()  # what this machine cannot do, after every refusal
        if problem is not None:
            err.print(f"[yellow]warning: {problem}; only unsandboxed tournaments can be "
                      "played here[/]")
        for line in missing_defences(Launch()):
            err.print(f"[yellow]warning: {line}[/]", soft_wrap=True)
        install_schema(db.engine)
        stopped_by: list[int] = []
        stats, unsaved, unfinished = asyncio.run(
            _work(db, options, tournament, until_done, stopped_by))
    if json_out:
        sys.stdout.write(json.dumps({"played": stats.played, "skipped": stats.skipped,
                                     "restarts": stats.restarts,
                                     "match_s": round(stats.match_s, 3),
                                     "store_s": round(stats.store_s, 3)}) + "\n")
    else:
        err.print(f"worker: played {stats.played} match(es)")
    if unsaved:
        fail("; ".join(unsaved), code=1)
    if unfinished and not stopped_by:
        fail(escape("; ".join(unfinished)), code=1)
    if stopped_by:  # 128 + the signal, as a shell reports it: 130 Ctrl-C, 143 SIGTERM
        raise typer.Exit(128 + stopped_by[0])


async def _work(db: Database, options: WorkerOptions, tournament: int | None,
                until_done: bool, stopped_by: list[int]
                ) -> tuple[WorkerStats, list[str], list[str]]:
    """Run a worker until done or stopped; the signals that stopped it go in `stopped_by`.
    Returns its figures, the records it could not store, and (`until_done`) the
    tournaments it took jobs of that were left unfinished (`QueueWorker.unfinished`)."""
    from cfarena.server.tournament.worker import QueueWorker, queue_empty

    worker = QueueWorker(db, options, only=tournament)
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        """The first signal: the matches in play get STOP_GRACE_S to finish and be
        stored, then are cut. The second: cut them now. A cut match's job goes back to
        the queue, to be played from its seed by a worker."""
        stopped_by.append(signum)
        if worker.stopping:
            worker.halt()
        else:
            err.print(f"stopping: the matches in play get {STOP_GRACE_S:g} s to finish, then "
                      "go back to the queue (again to stop now)")
            worker.shut_down(STOP_GRACE_S)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    await worker.start()
    try:
        stats = await worker.run(
            until=(lambda: queue_empty(db, tournament)) if until_done else None)
        unfinished: list[str] = []
        if until_done and not stopped_by:
            try:
                unfinished = await asyncio.to_thread(worker.unfinished)
            except StorageError as exc:
                unfinished = [f"cannot tell whether its tournaments are finished: {exc}"]
    finally:
        await worker.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
    return stats, worker.stats.unsaved, unfinished


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
