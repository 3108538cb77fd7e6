"""`cfarena sprt NEW OLD` (is NEW better than OLD?) and `cfarena sprt-tests` (list them)."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from cfarena.bots import BUNDLED
from cfarena.server.cli.common import (
    DbOption,
    build_rules,
    check_range,
    check_seed,
    check_time_control,
    database,
    err,
    fail,
    out,
    print_json,
)
from cfarena.server.cli.tournament import (
    _sqlite_files,
    check_sandbox,
    parse_bot,
    play_to_end,
    run_tournament_cmd,
    say_missing_defences,
)
from cfarena.server.referee import MatchRecord, TimeControl
from cfarena.server.sandbox import SandboxLimits
from cfarena.server.sprt.match_results import ScoreKind
from cfarena.server.sprt.sequential import EloModel, SprtBounds, SprtStatus, Verdict
from cfarena.server.storage import Database
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.sprt_runner import SprtRun, queue_sprt, run_sprt
from cfarena.server.tournament.sprt_test import SprtConfig

# exit codes a bot's CI can gate on (2, a usage error or a test that cannot be played,
# is `fail`'s; 4: storage failed, no verdict; 130/143: interrupted)
EXIT_CODES = {Verdict.H1: 0, Verdict.H0: 1, Verdict.INCONCLUSIVE: 3}
STORAGE_FAILED = 4
VERDICT_TEXT = {
    Verdict.H1: "H1 accepted: NEW is better",
    Verdict.H0: "H0 accepted: NEW is not better (by elo1)",
    Verdict.INCONCLUSIVE: "inconclusive: the match cap was reached first",
    Verdict.CONTINUE: "undecided",
}


def figures(status: SprtStatus, model: EloModel) -> str:
    """One line: matches, LLR in its bounds, the Elo difference (the bounds' model)
    with its 95% interval, LOS."""
    e = status.estimate
    if model is EloModel.NORMALIZED:
        elo, low, high, unit = e.nelo, e.nelo_low, e.nelo_high, "nElo"
    else:
        elo, low, high, unit = e.elo, e.elo_low, e.elo_high, "Elo"
    elo, low, high = elo + 0.0, low + 0.0, high + 0.0  # no "-0.0"
    shown = (f"{unit} {elo:+.1f} [{low:+.1f}, {high:+.1f}]  LOS {100 * e.los:.1f}%"
             if status.groups else f"{unit} -  LOS -")
    return (f"matches {status.matches}  LLR {status.llr:+.2f} "
            f"[{status.lower:.2f}, {status.upper:.2f}]  {shown}")


class _SprtProgress:
    """Rich progress on stderr: matches towards the cap, and the test's figures."""

    def __init__(self, model: EloModel, max_matches: int) -> None:
        self.model = model
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[figures]}"), console=err, transient=False)
        self.max_matches = max_matches
        self.task: TaskID | None = None

    def started(self, test_id: int, status: SprtStatus, resumed: bool) -> None:
        self.progress.start()
        self.task = self.progress.add_task(
            f"{'resuming' if resumed else 'test'} #{test_id}", total=self.max_matches,
            completed=status.matches, figures=figures(status, self.model))

    def match_done(self, record: MatchRecord) -> None:
        if record.faults:
            kinds = ", ".join(sorted({f.kind.value for f in record.faults}))
            self.progress.console.print(f"[yellow]match {record.match_id}: faults ({kinds})[/]")

    def group_done(self, status: SprtStatus) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=status.matches,
                                 figures=figures(status, self.model))

    def stop(self) -> None:
        self.progress.stop()


def _finite(value: float) -> float | None:
    """A figure for JSON (None for NaN or an infinite Elo)."""
    return value if math.isfinite(value) else None


def run_json(config: SprtConfig, run: SprtRun) -> dict[str, Any]:
    """What `--json` prints: the verdict and every figure."""
    s, e, b = run.status, run.status.estimate, config.bounds
    return {
        "test_id": run.test_id, "tournament_id": run.tournament_id,
        "new": config.new.name, "old": config.old.name, "verdict": s.verdict.value,
        "groups": s.groups, "matches": s.matches, "played_now": run.played,
        "resumed": run.resumed, "already_finished": run.already_finished,
        "llr": s.llr, "llr_lower": s.lower, "llr_upper": s.upper,
        "elo0": b.elo0, "elo1": b.elo1, "alpha": b.alpha, "beta": b.beta,
        "elo_model": b.model.value, "score_kind": config.score.value,
        "score": {"mean": _finite(e.score), "low": _finite(e.score_low),
                  "high": _finite(e.score_high)},
        "elo": {"value": _finite(e.elo), "low": _finite(e.elo_low), "high": _finite(e.elo_high)},
        "nelo": {"value": _finite(e.nelo), "low": _finite(e.nelo_low),
                 "high": _finite(e.nelo_high)},
        "los": _finite(e.los), "wall_s": round(run.wall_s, 2),
    }


def default_field(new: str, old: str, players: int) -> list[str]:
    """The bundled bots other than NEW and OLD (by name), as many as the other seats."""
    return [name for name in BUNDLED if name not in (new, old)][:max(players - 2, 0)]


def sprt_cmd(
    new: Annotated[str, typer.Argument(metavar="NEW", help="the candidate: NAME (a bundled bot) or "
                                       "NAME=COMMAND")],
    old: Annotated[str, typer.Argument(
        metavar="OLD", help="the version to beat: NAME or NAME=COMMAND")],
    field: Annotated[list[str] | None, typer.Option(
        "--field", help="a bot for the other seats at tables of more than 2, NAME or "
        "NAME=COMMAND (repeatable, seated in order) [default: the bundled bots other than "
        "NEW and OLD]")] = None,
    elo0: Annotated[float, typer.Option("--elo0", help="H0: NEW's Elo difference over OLD "
                                        "is this")] = 0.0,
    elo1: Annotated[float, typer.Option("--elo1", help="H1: NEW's Elo difference over OLD "
                                        "is this (above elo0)")] = 5.0,
    alpha: Annotated[float, typer.Option("--alpha", help="chance of accepting H1 when H0 "
                                         "holds")] = 0.05,
    beta: Annotated[float, typer.Option("--beta", help="chance of accepting H0 when H1 "
                                        "holds")] = 0.05,
    elo_model: Annotated[EloModel, typer.Option(
        "--elo-model", help="how --elo0/--elo1 are measured (docs/TESTING_BOTS.md)")
    ] = EloModel.NORMALIZED,
    max_matches: Annotated[int, typer.Option(
        "--max-matches", help="stop undecided (inconclusive) after this many matches")
    ] = 60_000,
    score: Annotated[ScoreKind, typer.Option(
        "--score", help="a seat's result: its points (raw), its points corrected by the luck "
        "of its draws (adjusted) or its placement (docs/TESTING_BOTS.md)")] = ScoreKind.ADJUSTED,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="fix the test's seed (deals derive from it) [default: drawn from the "
        "OS, unpredictable]")] = None,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-c", help="deal groups played side by side (a new test's batch: "
        "its deal groups are scheduled this many at a time)")] = 2,
    queue_only: Annotated[bool, typer.Option(
        "--queue-only", help="PostgreSQL: create (or find) the test and queue its deal groups "
        "for `cfarena worker`s on any machine, without playing here; they play it to its "
        "verdict")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the result as one JSON "
                                           "object")] = False,
    **shared: Any,
) -> None:
    """Test whether NEW is better than OLD: a sequential test (SPRT) on duplicate deal groups.

    Plays deal groups (one deal in every seating, NEW and OLD at the same table) until
    the test decides; exit code 0 when H1 is accepted (NEW is better), 1 when H0 is, 3
    when --max-matches is reached first. Run the same command again to resume an
    interrupted test (docs/TESTING_BOTS.md).
    """
    o = SimpleNamespace(**shared)  # run-tournament's options (`_SHARED`)
    config, launch = _config(
        new, old, field, o.players, o.rules, o.rules_file, o.rule or [],
        (elo0, elo1, alpha, beta, elo_model), max_matches, score, seed,
        TimeControl(o.timeout_ms, o.bank_ms, o.increment_ms, o.strikes), concurrency,
        o.no_sandbox, o.memory_mb, o.cpu_seconds, o.db_url)
    if queue_only and not o.db_url.startswith("postgresql"):
        fail("--queue-only needs PostgreSQL (--db postgresql+psycopg://...): workers take "
             "the test's matches from its job queue")
    with database(o.db_url, storage_code=STORAGE_FAILED) as db:
        say_missing_defences(launch)
        if queue_only:
            _queue(config, db, launch, concurrency, json_out)
        bar = _SprtProgress(elo_model, max_matches)
        run = play_to_end(run_sprt(config, db, launch, concurrency=concurrency, progress=bar),
                          bar.stop, storage_code=STORAGE_FAILED)
    verdict = run.status.verdict
    if json_out:
        print_json(run_json(config, run))
    else:
        if run.already_finished:
            err.print(f"test #{run.test_id} with this configuration is finished; its result "
                      "follows")
        out.print(f"test #{run.test_id}: {escape(config.new.name)} (NEW) vs "
                  f"{escape(config.old.name)} (OLD), {config.players}-player tables, "
                  f"{config.matches_per_group} matches per deal group")
        out.print(figures(run.status, elo_model))
        out.print(f"[bold]{VERDICT_TEXT[verdict]}[/]")
    raise typer.Exit(EXIT_CODES.get(verdict, 3))


def _queue(config: SprtConfig, db: Database, launch: Launch, concurrency: int,
           json_out: bool) -> None:
    """`--queue-only`: the test created (or found) and its deal groups queued."""
    info, queued = play_to_end(queue_sprt(config, db, launch, concurrency=concurrency),
                               lambda: None, storage_code=STORAGE_FAILED)
    if json_out:
        print_json({"test_id": info.id, "tournament_id": info.tournament_id,
                    "verdict": info.verdict.value, "queued": queued})
    else:
        out.print(f"test #{info.id} ({info.verdict.value}): {queued} match job(s) queued; "
                  "`cfarena worker --db URL` on any machine plays them")
    raise typer.Exit(0)


# the options sprt takes from run-tournament, as it declares them
_SHARED = ("players", "rules", "rules_file", "rule", "timeout_ms", "bank_ms", "increment_ms",
           "strikes", "no_sandbox", "memory_mb", "cpu_seconds", "db_url")
_OWN = inspect.signature(sprt_cmd, eval_str=True)
_RUN = inspect.signature(run_tournament_cmd, eval_str=True)
sprt_cmd.__signature__ = _OWN.replace(  # type: ignore[attr-defined]
    parameters=[*(p for p in _OWN.parameters.values() if p.kind is not p.VAR_KEYWORD),
                *(_RUN.parameters[name] for name in _SHARED)])
sprt_cmd.__annotations__ = {**{k: v for k, v in sprt_cmd.__annotations__.items()
                               if k != "shared"},
                            **{name: run_tournament_cmd.__annotations__[name]
                               for name in _SHARED}}


def _config(new: str, old: str, field: list[str] | None, players: int, rules: str | None,
            rules_file: Path | None, rule: list[str],
            bounds: tuple[float, float, float, float, EloModel], max_matches: int,
            score: ScoreKind, seed: int | None, time_control: TimeControl, concurrency: int,
            no_sandbox: bool, memory_mb: int, cpu_seconds: int, db_url: str
            ) -> tuple[SprtConfig, Launch]:
    """The test and how its bots start, from the options (exit 2 on a usage error)."""
    new_spec, old_spec = parse_bot(new, "NEW"), parse_bot(old, "OLD")
    if new_spec.name == old_spec.name:
        fail("NEW and OLD must have different names (give one bot two names with "
             "NAME=COMMAND)")
    if not 2 <= players <= 8:
        fail(f"--players must be 2-8, got {players}")
    if field and players == 2:
        fail("--field: a 2-player table has no other seats (raise --players)")
    field_specs = [parse_bot(f, "--field") for f in
                   (field or default_field(new_spec.name, old_spec.name, players))]
    names = [f.name for f in field_specs]
    if len(set(names)) != len(names) or {new_spec.name, old_spec.name} & set(names):
        fail("--field: a field bot must be named once, and differ from NEW and OLD")
    if players > 2 and not field_specs:
        fail(f"--field: a {players}-player table needs bots for its other seats")
    if len(field_specs) > players - 2:
        fail(f"--field: {len(field_specs)} bots for the {players - 2} other seats of a "
             f"{players}-player table")
    elo0, elo1, alpha, beta, model = bounds
    try:
        sprt_bounds = SprtBounds(elo0, elo1, alpha, beta, model)
    except ValueError as exc:
        fail(f"--elo0/--elo1/--alpha/--beta: {exc}")
    check_time_control(time_control.move_timeout_ms, time_control.bank_ms,
                       time_control.increment_ms)
    for opt, value, low, high in (
            ("--concurrency", concurrency, 1, 64), ("--strikes", time_control.strikes, 1, 1000),
            ("--memory-mb", memory_mb, 1, 1 << 20), ("--cpu-seconds", cpu_seconds, 1, 7 * 86400)):
        check_range(opt, value, low, high)
    check_seed(seed)
    rule_set = build_rules(rules, rule, rules_file, players)
    config = SprtConfig(new_spec, old_spec, tuple(field_specs), rule_set, players, sprt_bounds,
                        score, max_matches, seed, time_control)
    check_range("--max-matches", max_matches, config.matches_per_group, 10_000_000)
    check_sandbox(no_sandbox)
    launch = Launch(sandbox=not no_sandbox,
                    limits=SandboxLimits(memory_mib=memory_mb, cpu_seconds=cpu_seconds),
                    hide=tuple(_sqlite_files(db_url)))
    return config, launch


def sprt_tests_cmd(db_url: str = DbOption,
                   json_out: Annotated[bool, typer.Option("--json", help="print JSON")
                                       ] = False) -> None:
    """List bot tests (`cfarena sprt`) with their state, verdict, matches and LLR."""
    with database(db_url, create=False) as db:
        tests = db.list_sprt_tests()
    rows = []
    for t in tests:
        terms = t.config.get("sprt", {})
        b = SprtBounds.from_json(terms)
        rows.append({"id": t.id, "tournament_id": t.tournament_id, "new": t.new_bot,
                     "old": t.old_bot, "state": t.status.value, "verdict": t.verdict.value,
                     "groups": t.groups, "matches": t.matches, "llr": t.llr,
                     "llr_lower": b.lower, "llr_upper": b.upper, "elo0": b.elo0,
                     "elo1": b.elo1, "elo_model": b.model.value, "score_kind": terms["score"],
                     "created_at": t.created_at})
    if json_out:
        print_json(rows)
        return
    table = Table("id", "NEW", "OLD", "state", "verdict", "matches", "LLR [bounds]",
                  "elo0..elo1", "created")
    for r in rows:
        table.add_row(str(r["id"]), escape(r["new"]), escape(r["old"]), r["state"],
                      r["verdict"], str(r["matches"]),
                      f"{r['llr']:+.2f} [{r['llr_lower']:.2f}, {r['llr_upper']:.2f}]",
                      f"{r['elo0']:g}..{r['elo1']:g} {r['elo_model']}",
                      f"{r['created_at']:%Y-%m-%d %H:%M}")
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("sprt")(sprt_cmd)
    app.command("sprt-tests")(sprt_tests_cmd)


__all__ = ["register"]
