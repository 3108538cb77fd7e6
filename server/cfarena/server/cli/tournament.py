"""`cfarena run-tournament` (the main job) and `cfarena tournaments` (list, `create`)."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from cfarena.bots import BUNDLED, bundled_names, settings_problem
from cfarena.server.bot_names import bot_name_problem
from cfarena.server.cli.common import (
    DbOption,
    build_rules,
    check_connect_timeout,
    check_id,
    check_range,
    check_seed,
    check_time_control,
    config_json,
    database,
    err,
    fail,
    make_log_dir,
    out,
    print_json,
)
from cfarena.server.cli.report import standings_table
from cfarena.server.referee import MatchRecord, TimeControl
from cfarena.server.sandbox import SandboxLimits, sandbox_problem
from cfarena.server.standings import standings_rows
from cfarena.server.storage import Database, StorageError
from cfarena.server.tournament import BotSpec, TournamentConfig, TournamentError, run_tournament
from cfarena.server.tournament.config import missing_defences
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.runner import schedule_tournament
from cfarena.server.tournament.stored_tournament import files_note

DEFAULT_BOTS = tuple(BUNDLED)  # every bundled bot
LADDER_PREFIX = "ladder:"  # `--bot NAME=ladder:BOT`: a dial-in ladder bot (refused)

# deal seeds per table: a schedule is built whole in memory (rotations x tables x games)
MAX_GAMES = 100_000


def parse_bot(spec: str, option: str = "--bot") -> BotSpec:
    """`NAME` (a bundled bot) or `NAME=COMMAND`, with the hashes of the files it runs;
    a problem is one line naming `option` (sprt's NEW, OLD, --field)."""
    name, sep, command = spec.partition("=")
    name = name.strip()
    problem = bot_name_problem(name)
    if problem is not None:
        fail(f"{option}: {problem}")
    if sep and not command.strip():
        fail(f"{option} {name}=: the command is empty")
    if sep and command.strip().startswith(LADDER_PREFIX):
        fail(f"{option} {name}={command.strip()}: seating a registered ladder bot is not "
             "supported (a tournament starts its own processes): give its command, "
             f"{name}=COMMAND; the entrant is the tournament's own, the ladder bot is untouched")
    if not sep and name not in BUNDLED:
        fail(f"{option} {name}: no bundled bot of that name (bundled: {bundled_names()}); "
             f"use NAME=COMMAND for your own")
    settings = () if sep else bundled_settings(name)
    problem = settings_problem(name, dict(settings))
    if problem is not None:
        fail(f"bundled bot {name}: {problem} (in your environment)")
    try:
        return BotSpec(name, command.strip() if sep else None, settings=settings).hashed()
    except OSError as exc:
        fail(f"{option} {name}: cannot read {exc.filename}: {exc.strerror}")


def bundled_settings(name: str) -> tuple[tuple[str, str], ...]:
    """The settings of the bundled bot `name` that the organiser's environment gives
    (`BundledBot.settings`; blank ones are not given), sorted."""
    return tuple(sorted((variable, os.environ[variable].strip())
                        for variable in BUNDLED[name].settings
                        if os.environ.get(variable, "").strip()))


def check_sandbox(no_sandbox: bool) -> None:
    """Warn that bots run unsandboxed (`--no-sandbox`), or exit 2 if this machine cannot
    sandbox them."""
    if no_sandbox:
        err.print("[yellow]--no-sandbox: bots run unsandboxed, as you; only for bots you "
                  "trust[/]")
    else:
        problem = sandbox_problem()
        if problem is not None:
            fail(problem)


class _ProgressBar:
    """Rich progress on stderr: matches done, ETA, live leader."""

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[leader]}"),
            console=err,
            disable=not enabled,
            transient=False,
        )
        self.task: TaskID | None = None

    def started(self, tournament_id: int, total: int, done: int, resumed: bool) -> None:
        verb = "resuming" if resumed else "tournament"
        self.progress.start()
        self.task = self.progress.add_task(
            f"{verb} #{tournament_id}", total=total, completed=done, leader=""
        )

    def match_done(self, record: MatchRecord, leader: str | None) -> None:
        if self.task is None:
            return
        note = f"leader: {leader}" if leader else ""
        if record.faults:
            kinds = ", ".join(sorted({f.kind.value for f in record.faults}))
            self.progress.console.print(
                f"[yellow]match {record.match_id}: faults ({kinds})[/]"
            )
        self.progress.update(self.task, advance=1, leader=note)

    def stop(self) -> None:
        self.progress.stop()


def run_tournament_cmd(
    bot: Annotated[list[str] | None, typer.Option(
        "--bot", help=f"NAME (bundled: {bundled_names()}) or NAME=COMMAND; "
        "repeatable. The command gets CFARENA_SERVER and CFARENA_TOKEN in its environment. "
        "Default: every bundled bot.")] = None,
    players: Annotated[int, typer.Option("--players", "-k", help="seats per table (2-8)")] = 4,
    rules: Annotated[str | None, typer.Option(
        "--rules", help="preset: standard, maltese, trains [default: standard, or the "
        "rules file's preset]")] = None,
    rules_file: Annotated[Path | None, typer.Option(
        "--rules-file", help="TOML or JSON file of rule options (preset = ..., spokes = ...)")
    ] = None,
    rule: Annotated[list[str] | None, typer.Option(
        "--rule", help="override one rule option, KEY=VALUE (repeatable), e.g. rounds=half")
    ] = None,
    games: Annotated[int, typer.Option("--games", "-g", help="deal seeds per table "
                                       "(each played in every seat rotation)")] = 2,
    timeout_ms: Annotated[int, typer.Option("--timeout-ms", help="time per decision")] = 1000,
    bank_ms: Annotated[int, typer.Option("--bank-ms", help="time bank per match")] = 0,
    increment_ms: Annotated[int, typer.Option("--increment-ms", help="bank increment")] = 0,
    strikes: Annotated[int, typer.Option("--strikes", help="faults that forfeit a match")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="matches at once")
                           ] = 2,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="fix the tournament seed (deals derive from it) to rerun a tournament "
        "exactly; not for competitions [default: drawn from the OS, unpredictable]")] = None,
    db_url: str = DbOption,
    json_out: Annotated[bool, typer.Option("--json", help="print final standings as JSON")
                        ] = False,
    resume: Annotated[int | None, typer.Option("--resume", help="resume tournament ID")] = None,
    new: Annotated[bool, typer.Option(
        "--new", help="play a new tournament even if this configuration was played before "
        "(by default an unfinished one is resumed and a finished one is reported)")] = False,
    log_dir: Annotated[Path | None, typer.Option(
        "--log-dir", help="also write each seat's output here (it is always stored: "
        "`cfarena show MATCH --logs`)")] = None,
    no_sandbox: Annotated[bool, typer.Option(
        "--no-sandbox", help="run the bots unsandboxed (only bots you trust)")] = False,
    memory_mb: Annotated[int, typer.Option(
        "--memory-mb", help="memory limit of a bot process (and its children), MiB")] = 512,
    cpu_seconds: Annotated[int, typer.Option(
        "--cpu-seconds", help="CPU time limit of a bot process per match, s")] = 300,
    max_processes: Annotated[int, typer.Option(
        "--max-processes", help="processes a bot may run at once")] = 64,
    max_files: Annotated[int, typer.Option(
        "--max-files", help="descriptors (files, sockets, pipes) each process of a bot may "
        "have open (RLIMIT_NOFILE); a Python SDK bot uses about 15")] = 256,
    sandbox_bind: Annotated[list[Path] | None, typer.Option(
        "--sandbox-bind", help="a file or directory every bot may read (repeatable); "
        "bots see only system directories, Python and the paths on their command line")
    ] = None,
    connect_timeout: Annotated[float, typer.Option(
        "--connect-timeout", help="seconds a bot may take to connect")] = 30.0,
    fill: Annotated[bool, typer.Option(
        "--fill", help="with fewer bots than seats, fill each table with copies (A B C A; "
        "a bot's processes at one table can read each other's hands); without it, refused")
                    ] = False,
    gauntlet: Annotated[str | None, typer.Option(
        "--gauntlet", metavar="NEW", help="only the tables where bot NEW sits (every "
        "rotation of each): NEW plays the field, the field never plays itself; the "
        "standings show NEW's head-to-head Elo difference with each opponent")] = None,
    name: Annotated[str, typer.Option("--name", help="tournament name")] = "",
) -> None:
    """Run a round-robin between bots on a local referee and print the standings.

    With no options: the four bundled bots, `standard` rules, 4-player tables,
    SQLite file cfarena.db. `--gauntlet NEW` plays only NEW's tables. Run the same
    command again to resume an interrupted tournament (a bot whose files changed
    makes it a new one). On PostgreSQL the matches are jobs: `cfarena worker` on other
    machines plays some of them meanwhile (docs/WORKERS.md).
    """
    _tournament_cmd(False, **locals())


def create_cmd(**options: Any) -> None:
    """Schedule a tournament without playing it: its matches wait for `cfarena worker`s
    (PostgreSQL), or for `run-tournament` with the same options (which resumes it)."""
    _tournament_cmd(True, **options)


_RUN_ONLY = ("concurrency", "log_dir", "resume", "connect_timeout", "sandbox_bind")
_RUN_SIGNATURE = inspect.signature(run_tournament_cmd, eval_str=True)
create_cmd.__signature__ = _RUN_SIGNATURE.replace(  # type: ignore[attr-defined]
    parameters=[p for p in _RUN_SIGNATURE.parameters.values() if p.name not in _RUN_ONLY])
create_cmd.__annotations__ = {k: v for k, v in run_tournament_cmd.__annotations__.items()
                              if k not in _RUN_ONLY}


def _tournament_cmd(schedule_only: bool, *, bot: list[str] | None, players: int,
                    rules: str | None, rules_file: Path | None, rule: list[str] | None,
                    games: int, timeout_ms: int, bank_ms: int, increment_ms: int,
                    strikes: int, seed: int | None, db_url: str, json_out: bool, new: bool,
                    no_sandbox: bool, memory_mb: int, cpu_seconds: int, max_processes: int,
                    name: str, max_files: int = 256, fill: bool = False,
                    gauntlet: str | None = None,
                    concurrency: int = 2,
                    resume: int | None = None,
                    log_dir: Path | None = None, sandbox_bind: list[Path] | None = None,
                    connect_timeout: float = 30.0) -> None:
    specs = [parse_bot(s) for s in (bot or list(DEFAULT_BOTS))]
    if len({s.name for s in specs}) != len(specs):
        fail("--bot: the same bot name is given twice")
    if len(specs) < 2:
        fail("--bot: a tournament needs at least two bots")
    if not 2 <= players <= 8:
        fail(f"--players must be 2-8, got {players}")
    check_time_control(timeout_ms, bank_ms, increment_ms)
    for opt, value, low, high in (
            ("--games", games, 1, MAX_GAMES), ("--concurrency", concurrency, 1, None),
            ("--strikes", strikes, 1, 1000), ("--memory-mb", memory_mb, 1, 1 << 20),
            ("--cpu-seconds", cpu_seconds, 1, 7 * 86400),
            ("--max-processes", max_processes, 1, 1 << 22),
            ("--max-files", max_files, 1, 1 << 20)):
        check_range(opt, value, low, high)
    check_connect_timeout(connect_timeout)
    check_seed(seed)
    check_id("--resume", resume)
    rule_set = build_rules(rules, rule or [], rules_file, players)
    if log_dir is not None:
        make_log_dir(log_dir)
    for path in sandbox_bind or []:
        if not path.exists():
            fail(f"--sandbox-bind: no such file or directory: {path}")
    check_sandbox(no_sandbox)
    launch = Launch(
        sandbox=not no_sandbox,
        limits=SandboxLimits(memory_mib=memory_mb, cpu_seconds=cpu_seconds,
                             processes=max_processes, files=max_files),
        binds=tuple(p.resolve() for p in sandbox_bind or []),
        hide=(*_sqlite_files(db_url), *([log_dir.resolve()] if log_dir else [])),
        connect_timeout=connect_timeout,
    )
    config = TournamentConfig(
        bots=tuple(specs), rules=rule_set, players=players, games=games, seed=seed,
        time_control=TimeControl(timeout_ms, bank_ms, increment_ms, strikes), name=name,
        fill=fill, gauntlet=gauntlet,
    )
    problem = config.seats_problem()
    if problem is not None:
        fail(problem)
    note = config.fill_note()
    if note is not None:
        err.print(escape(note), soft_wrap=True)
    if schedule_only:
        _schedule(config, db_url, launch, new, json_out)
        return
    with database(db_url) as db:
        say_missing_defences(launch)
        _say_files_changed(config, db, launch, new or resume is not None)
        bar = _ProgressBar(enabled=True)
        result = play_to_end(run_tournament(
            config, db, concurrency=concurrency, progress=bar, resume_id=resume,
            log_dir=log_dir, connect_timeout=connect_timeout, launch=launch, new=new,
        ), bar.stop)
        rows = standings_rows(db, result.tournament_id)
        if json_out:
            print_json({
                "tournament_id": result.tournament_id,
                "status": result.status,
                "resumed": result.resumed,
                "matches": result.total,
                "played_now": result.played,
                "already_finished": result.already_finished,
                "wall_s": round(result.wall_s, 2),
                "standings": rows,
            })
        else:
            if result.already_finished:
                err.print(f"tournament #{result.tournament_id} with this configuration is "
                          "finished; its standings follow (--new plays another)")
            out.print(standings_table(
                rows, f"Tournament #{result.tournament_id}: {rule_set.name}, "
                f"{players}-player tables, {result.total} matches ({result.wall_s:.1f} s)"))


def _say_files_changed(config: TournamentConfig, db: Database, launch: Launch,
                       elsewhere: bool) -> None:
    """One line when a bot's files changed since this command's tournament was stored
    (a new one starts); nothing with --new or --resume (`elsewhere`)."""
    if elsewhere:
        return
    try:
        note = files_note(config, db, launch)
    except StorageError:
        return  # the run itself will say what is wrong with the database
    if note is not None:
        err.print(f"[yellow]{escape(note)}[/]", soft_wrap=True)


def say_missing_defences(launch: Launch) -> None:
    """What this machine cannot defend, one line each (run-tournament and sprt): after
    the refusals of the options and of the database (not those found when the bots
    start)."""
    for line in missing_defences(launch):
        err.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)


def _schedule(config: TournamentConfig, db_url: str, launch: Launch, new: bool,
              json_out: bool) -> None:
    with database(db_url) as db:
        say_missing_defences(launch)
        _say_files_changed(config, db, launch, new)
        try:
            tournament_id, total, queued = asyncio.run(
                schedule_tournament(config, db, launch, new=new))
        except TournamentError as exc:
            fail(escape(str(exc)))
    if json_out:
        print_json({"tournament_id": tournament_id, "matches": total, "queued": queued})
        return
    where = ("`cfarena worker --db URL` on each machine plays them" if queued is not None
             else "`run-tournament` with the same options plays them")
    out.print(f"tournament #{tournament_id}: {total} matches scheduled; {where}")


def _sqlite_files(url: str) -> list[Path]:
    """The files of a SQLite database (kept out of every sandbox's view), or none."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return []
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return []
    path = Path(parsed.database).resolve()
    return [path, *(path.with_name(path.name + end)
                    for end in ("-wal", "-shm", "-journal"))]


tournaments_app = typer.Typer(help="List tournaments with their progress (`create`: "
                              "schedule one for workers).", no_args_is_help=False)


@tournaments_app.callback(invoke_without_command=True)
def tournaments_cmd(ctx: typer.Context, db_url: str = DbOption,
                    json_out: Annotated[bool, typer.Option(
                        "--json", help="print JSON (seeds as decimal strings)")] = False) -> None:
    """List tournaments, with how many of their matches are done (`create`: schedule one)."""
    if ctx.invoked_subcommand is not None:
        return
    with database(db_url, create=False) as db:
        items = db.list_tournaments()
        counts = {t.id: db.match_counts(t.id) for t in items}
    if json_out:
        print_json([{"id": t.id, "name": t.name, "status": t.status.value,
                     "created_at": t.created_at, "config": config_json(t.config),
                     "matches": sum(counts[t.id].values()),
                     "finished": counts[t.id].get("finished", 0),
                     "running": counts[t.id].get("running", 0)}
                    for t in items])
        return
    table = Table("id", "name", "status", "done", "bots", "created")
    table.columns[1].overflow = table.columns[4].overflow = "fold"
    for t in items:
        bots = ", ".join(b["name"] for b in t.config.get("bots", []))
        done = f"{counts[t.id].get('finished', 0)}/{sum(counts[t.id].values())}"
        table.add_row(str(t.id), t.name, t.status.value, done, bots,
                      f"{t.created_at:%Y-%m-%d %H:%M}")
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("run-tournament")(run_tournament_cmd)
    tournaments_app.command("create")(create_cmd)
    app.add_typer(tournaments_app, name="tournaments")


_T = TypeVar("_T")


def play_to_end(run: Coroutine[Any, Any, _T], stop_progress: Callable[[], None], *,
                storage_code: int = 1) -> _T:
    """Run a command's play (`run_tournament`, `run_sprt`) to its end, then stop its
    progress display. Ctrl-C or SIGTERM stops it (the finished matches are stored; exit
    130 or 143, as a shell reports the signal); a TournamentError is one line (exit 2),
    a StorageError too (exit `storage_code`: sprt's 1 is a verdict)."""
    try:
        terminated: list[bool] = []
        result = asyncio.run(_terminable(run, terminated))
    except (KeyboardInterrupt, asyncio.CancelledError):
        if not terminated and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
            raise
        stop_progress()
        err.print("[yellow]interrupted: finished matches are stored; run the same "
                  "command again to resume[/]")
        # 128 + the signal, as a shell reports it: 130 Ctrl-C, 143 SIGTERM
        raise typer.Exit(143 if terminated else 130) from None
    except TournamentError as exc:
        stop_progress()
        fail(escape(str(exc)))  # it may quote a bot's output
    except StorageError as exc:
        stop_progress()
        fail(str(exc), code=storage_code)
    stop_progress()
    return result


async def _terminable(run: Coroutine[Any, Any, _T], terminated: list[bool]) -> _T:
    """Await `run`; a SIGTERM cancels it as Ctrl-C does (the cut matches are stored
    aborted) and is noted in `terminated`."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()

    def on_sigterm() -> None:
        terminated.append(True)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        return await run
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
