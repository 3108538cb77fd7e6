"""`python -m cfarena.sdk play TARGET --vs greedy --vs smart`: games in this process.

No referee, no sandbox, no network: TARGET (loaded as `run` loads it) and its
opponents (the sample bots by name, or other bot targets) play `--games`
matches under the referee's own match law (`cfarena.sdk.local.play_match`)
with the referee's time control (`TimeControl`'s defaults unless given), each
seat's mistakes handled as `run` handles them. Seats rotate from game to
game (TARGET sits at seat g mod K in game g, counted from 0) and game g's seed
is `--seed` + g. Prints a line per game and a summary per entrant; `--log FILE`
writes the games' logs as JSON Lines (one format-2 game log a line), which
`cfarena replay --file FILE [MATCH]` and `cfarena verify --file FILE` read.
A late `choose` is judged late when it returns; one that never returns is not
cut off: Ctrl-C ends the run (exit status 130, the games before it logged).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.bots import BUNDLED, bundled_names, make_bot
from cfarena.engine import Rules
from cfarena.engine.rules import RulesError
from cfarena.match.log_format import SEED_BITS, log_line, record_to_log
from cfarena.match.record import MatchRecord
from cfarena.sdk.bot import Bot
from cfarena.sdk.cli import PROG, UsageError, load_bot_class
from cfarena.sdk.local import play_match
from cfarena.sdk.types import TimeControl

MAX_SEED = 2 ** (SEED_BITS - 1) - 1


@dataclass
class Entrant:
    """A bot in the line-up: its name in the logs, how to make it, what it scored."""

    name: str
    make: Callable[[], Bot]
    ranks: list[int] = field(default_factory=list)
    points: list[int] = field(default_factory=list)
    faults: int = 0
    forfeits: int = 0
    decision_s: list[float] = field(default_factory=list)

    def new(self) -> Bot:
        try:
            return self.make()
        except Exception as err:
            raise UsageError(f"cannot create {self.name}: {type(err).__name__}: {err}") from err

    def summary(self) -> str:
        games = len(self.ranks)
        wins = self.ranks.count(1)
        times = self.decision_s or [0.0]
        return (f"{self.name}: {games} game(s), {wins} won, mean rank "
                f"{statistics.fmean(self.ranks):.2f}, mean points "
                f"{statistics.fmean(self.points):.1f}, {self.faults} fault(s), "
                f"{self.forfeits} forfeit(s); {len(self.decision_s)} decisions, mean "
                f"{statistics.fmean(times) * 1000:.2f} ms, max {max(times) * 1000:.2f} ms")


def _opponent(spec: str) -> tuple[str, Callable[[], Bot]]:
    """A sample bot by name, else a bot target as `run` takes it."""
    if spec in BUNDLED:
        return spec, lambda: make_bot(spec)
    if not any(c in spec for c in "./:") and spec.isidentifier():
        raise UsageError(f"--vs {spec}: no sample bot of that name (samples: "
                         f"{bundled_names()}; or give a bot file or module)")
    cls = load_bot_class(spec)
    return cls.__name__, cls


def _line_up(target: str, opponents: Sequence[str], players: int | None) -> list[Entrant]:
    cls = load_bot_class(target)
    made: list[tuple[str, Callable[[], Bot]]] = [
        (cls.__name__, cls), *(_opponent(spec) for spec in opponents)]
    seats = players if players is not None else len(made)
    if seats < len(made):
        raise UsageError(f"--players {seats} has fewer seats than bots ({len(made)}: "
                         f"yours and {len(opponents)} --vs)")
    # more seats than bots: the opponents fill them again, in order
    while len(made) < seats:
        made.append(made[1 + (len(made) - 1) % len(opponents)])
    taken: dict[str, int] = {}
    entrants = []
    for name, make in made:
        taken[name] = taken.get(name, 0) + 1
        entrants.append(Entrant(name if taken[name] == 1 else f"{name}-{taken[name]}", make))
    return entrants


def _rules(preset: str, assignments: Sequence[str], players: int) -> Rules:
    options: dict[str, str] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--rule expects KEY=VALUE, got {item!r}")
        options[key.strip()] = value.strip()
    try:
        rules = Rules.preset(preset).with_options(**options)
        rules.resolve(players)
    except RulesError as err:
        raise UsageError(f"{err} (at a table of {players})") from None
    return rules


def _time_control(args: argparse.Namespace) -> TimeControl:
    for option, value, low in (("--timeout-ms", args.timeout_ms, 1), ("--bank-ms", args.bank_ms, 0),
                               ("--increment-ms", args.increment_ms, 0),
                               ("--strikes", args.strikes, 1)):
        if value < low:
            raise UsageError(f"{option} must be {low} or more, got {value}")
    return TimeControl(args.timeout_ms, args.bank_ms, args.increment_ms, args.strikes)


def _game_line(number: int, games: int, record: MatchRecord) -> list[str]:
    order = sorted(range(record.players), key=lambda s: (record.ranks[s], s))
    places = ", ".join(f"{record.ranks[s]}. {record.seat_bots[s]} {record.totals[s]}"
                       for s in order)
    lines = [f"game {number}/{games} (match {record.match_id}, seed {record.seed}): {places}"]
    for fault in record.faults:
        then = "; forfeited the match" if fault.forfeit else ""
        lines.append(f"  fault: {record.seat_bots[fault.seat]} (seat {fault.seat}) "
                     f"{fault.kind.name.lower()} at its turn {fault.turn_id}: "
                     f"{fault.detail}{then}")
    return lines


def play_command(args: argparse.Namespace) -> int:
    """Play the games `args` ask for (see the module docstring); UsageError for bad input."""
    if args.games < 1:
        raise UsageError(f"--games must be 1 or more, got {args.games}")
    if args.players is not None and args.players < 2:
        raise UsageError(f"--players must be 2 or more, got {args.players}")
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    if not -MAX_SEED - 1 <= seed <= MAX_SEED - (args.games - 1):
        raise UsageError(f"--seed must fit a signed {SEED_BITS}-bit integer with --games "
                         f"added, got {seed}")
    time_control = _time_control(args)
    entrants = _line_up(args.target, args.vs or ["greedy"], args.players)
    players = len(entrants)
    rules = _rules(args.rules, args.rule or [], players)
    log_file = None
    if args.log is not None:
        try:
            log_file = Path(args.log).open("w", encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as err:
            raise UsageError(f"--log {args.log}: cannot write it: "
                             f"{(err.strerror or str(err)).lower()}") from None
    started = time.perf_counter()
    game = 0
    try:
        for game in range(args.games):
            # the bot under test sits at seat game mod K, the others in order after it
            seated = [entrants[(s - game) % players] for s in range(players)]
            played = play_match(
                [e.new() for e in seated], rules, seed + game, f"local-{seed + game}",
                time_control, names=[e.name for e in seated], as_sdk=True)
            record = played.record
            for seat, entrant in enumerate(seated):
                entrant.ranks.append(record.ranks[seat])
                entrant.points.append(record.totals[seat])
                entrant.decision_s.extend(played.decisions[seat])
                entrant.faults += sum(f.seat == seat for f in record.faults)
                entrant.forfeits += seat in record.forfeited
            print("\n".join(_game_line(game + 1, args.games, record)), flush=True)
            if log_file is not None:
                log_file.write(log_line(record_to_log(record)) + "\n")
    except KeyboardInterrupt:  # e.g. a choose that never returns
        print(f"{PROG}: interrupted in game {game + 1} (the log holds the games before it)",
              file=sys.stderr)
        return 130
    finally:
        if log_file is not None:
            log_file.close()
    wall = time.perf_counter() - started
    print(f"{args.games} game(s) of {rules.name}, {players} players, seeds {seed}.."
          f"{seed + args.games - 1}, in {wall:.2f} s ({args.games / wall:.1f} games/s)")
    for entrant in entrants:
        print(entrant.summary())
    if args.log is not None:
        print(f"log: {args.log} (cfarena replay --file {args.log} MATCH --seat N; "
              f"cfarena verify --file {args.log})")
    return 0
