"""Measure the bundled bots' strength: an in-process round-robin at one 4-player table.

    python benchmarks/bot_strength.py --matches 200          # 50 deal seeds x 4 seat rotations
    python benchmarks/bot_strength.py --matches 40 --rounds 2 --preset maltese

No gRPC: the match runs under the referee's own match law
(`cfarena.server.law`: forced moves, per-seat turn ids, the time control,
faults and fallbacks), and every decision gets a `Turn` built as the referee
builds it (observation via `observe`, the events since the seat's previous
Turn via `visible_events`, the accumulated history as the SDK keeps it);
`on_match_start`, `on_events` and `on_match_end` are called.
Each deal seed is played in all four seat rotations, so every bot gets every
seat's hands (duplicate play). Ratings: a Bradley-Terry fit over all pairwise
results with a 95% bootstrap interval (`cfarena.server.ratings.fit_ratings`)
and the sequential pairwise Elo (`elo_update`) after the last match.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cfarena.bots import BUNDLED, make_bot
from cfarena.engine import Event, MatchState, Rules, observe, visible_events
from cfarena.sdk import Bot, Fault, MatchInfo, MatchResult, TimeControl, Turn
from cfarena.sdk.bot import resolve_choice
from cfarena.server.law import Answer, Decision, MatchLaw, Reply, play_out
from cfarena.server.match_record import MatchRecord

BOT_NAMES: tuple[str, ...] = tuple(BUNDLED)  # weakest to strongest, as registered


class IllegalChoiceError(RuntimeError):
    """A bot answered with something that was not offered."""


@dataclass
class PlayedMatch:
    """What one in-process match produced."""

    state: MatchState
    record: MatchRecord
    decisions: list[list[float]] = field(default_factory=list)  # per seat: seconds per choose()
    chosen: list[list[str]] = field(default_factory=list)  # per seat: move keys chosen


def play_match(
    bots: Sequence[Bot],
    rules: Rules,
    seed: int,
    match_id: str,
    deadline_ms: int = 1000,
    names: Sequence[str] | None = None,
    on_turn: Callable[[Turn, object], None] | None = None,
) -> PlayedMatch:
    """Play one match in-process under the referee's match law.

    Raises IllegalChoiceError if a bot returns a move that was not offered. A
    bot slower than `deadline_ms` times out as it would at the referee (a fault,
    the fallback move). `on_turn(turn, choice)` (for tests) sees every Turn and
    the bot's raw answer.
    """
    players = len(bots)
    seat_names = tuple(names) if names is not None else tuple(type(b).__name__ for b in bots)
    tc = TimeControl(move_timeout_ms=deadline_ms)
    law = MatchLaw(match_id, rules, seed, seat_names, tc)
    state = law.state
    for i, bot in enumerate(bots):
        bot.on_match_start(MatchInfo(match_id, i, state.rules, seat_names, tc))
    sent = [0] * players
    history: list[list[Event]] = [[] for _ in range(players)]
    played = PlayedMatch(state, law.record, [[] for _ in range(players)],
                         [[] for _ in range(players)])

    def ask(decision: Decision) -> Reply:
        seat, moves = decision.seat, decision.legal_moves
        events = visible_events(state, seat, sent[seat])
        sent[seat] += len(events)
        history[seat].extend(events)
        bot = bots[seat]
        turn = Turn(
            match_id=match_id,
            turn_id=decision.turn_id,
            observation=observe(state, seat),
            legal_moves=moves,
            events=tuple(events),
            history=tuple(history[seat]),
            deadline_ms=decision.deadline_ms,
            bank_ms=int(decision.bank_ms),
            received_at=time.monotonic(),
        )
        if events:
            bot.on_events(match_id, turn.events)
        start = time.perf_counter()
        choice = bot.choose(turn)
        elapsed = time.perf_counter() - start
        played.decisions[seat].append(elapsed)
        if on_turn is not None:
            on_turn(turn, choice)
        index = resolve_choice(choice, moves)
        if index is None:
            raise IllegalChoiceError(
                f"{seat_names[seat]} (seat {seat}) chose {choice!r}, not among "
                f"{[m.key for m in moves]} in match {match_id}"
            )
        played.chosen[seat].append(moves[index].key)
        return Answer(index, elapsed * 1000.0)

    record = play_out(law, ask)
    faults = tuple(Fault(f.seat, f.kind, f.detail, f.turn_id) for f in record.faults)
    for i, bot in enumerate(bots):
        events = visible_events(state, i, sent[i])
        if events:
            bot.on_events(match_id, events)
        bot.on_match_end(
            MatchResult(
                match_id=match_id,
                totals=tuple(record.totals),
                ranks=tuple(record.ranks),
                round_scores=tuple(tuple(r) for r in record.round_scores),
                faults=faults,
                forfeited=tuple(record.forfeited),
                reason=record.reason,
                seat=i,
            )
        )
    return played


# ------------------------------------------------------------------ benchmark


@dataclass(frozen=True)
class Task:
    seed: int
    rotation: int
    preset: str
    rounds: str | None
    deadline_ms: int


@dataclass(frozen=True)
class BotResult:
    name: str
    rank: int
    round_scores: tuple[int, ...]
    decision_seconds: tuple[float, ...]


@dataclass(frozen=True)
class TaskResult:
    task: Task
    results: tuple[BotResult, ...]  # one per seat
    wall: float


def rules_for(preset: str, rounds: str | None) -> Rules:
    rules = Rules.preset(preset)
    if rounds is not None:
        rules = rules.with_options(rounds=rounds)
    return rules


def run_task(task: Task) -> TaskResult:
    """One match: seat `i` gets bot `BOT_NAMES[(i + rotation) % 4]`."""
    n = len(BOT_NAMES)
    names = [BOT_NAMES[(i + task.rotation) % n] for i in range(n)]
    bots = [make_bot(name) for name in names]
    start = time.perf_counter()
    played = play_match(
        bots,
        rules_for(task.preset, task.rounds),
        seed=task.seed,
        match_id=f"bench-{task.preset}-{task.seed}-r{task.rotation}",
        deadline_ms=task.deadline_ms,
        names=names,
    )
    wall = time.perf_counter() - start
    record = played.record
    results = tuple(
        BotResult(
            name=names[seat],
            rank=record.ranks[seat],
            round_scores=tuple(r[seat] for r in record.round_scores),
            decision_seconds=tuple(played.decisions[seat]),
        )
        for seat in range(n)
    )
    return TaskResult(task, results, wall)


def _fit(
    matches: Sequence[Sequence[tuple[str, int]]],
) -> tuple[dict[str, tuple[float, float, float]], dict[str, float]]:
    """Bradley-Terry (elo, low, high) and sequential pairwise Elo per bot."""
    from cfarena.server.ratings import elo_update, fit_ratings

    fitted = fit_ratings(matches, bootstrap=200, seed=0)
    bt = {bot: (est.elo, est.low, est.high) for bot, est in fitted.items()}
    elo: dict[str, float] = {}
    for match in matches:
        elo.update(elo_update(elo, match))
    return bt, elo


def report(results: Sequence[TaskResult], wall: float) -> str:
    matches = [[(r.name, r.rank) for r in t.results] for t in results]
    bt, elo = _fit(matches)
    lines = [
        f"{'bot':<11} {'BT Elo':>7} {'95% CI':>15} {'pair Elo':>8} {'mean rank':>9} "
        f"{'score/round':>11} {'ms/decision':>11} {'max ms':>7} {'bot time s':>10}"
    ]
    for name in BOT_NAMES:
        rows = [r for t in results for r in t.results if r.name == name]
        if not rows:
            continue
        ranks = [r.rank for r in rows]
        scores = [s for r in rows for s in r.round_scores]
        times = [x for r in rows for x in r.decision_seconds]
        b_elo, low, high = bt[name]
        mean_ms = 1000.0 * sum(times) / len(times) if times else 0.0
        max_ms = 1000.0 * max(times) if times else 0.0
        lines.append(
            f"{name:<11} {b_elo:7.0f} {f'[{low:.0f}, {high:.0f}]':>15} {elo[name]:8.0f} "
            f"{sum(ranks) / len(ranks):9.2f} {sum(scores) / len(scores):11.2f} "
            f"{mean_ms:11.2f} {max_ms:7.1f} {sum(times):10.1f}"
        )
    rounds = sum(len(t.results[0].round_scores) for t in results)
    lines.append(f"{len(results)} matches, {rounds} rounds, wall time {wall:.1f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument(
        "--matches", type=int, default=200, help="matches, a multiple of 4 (default 200)"
    )
    parser.add_argument("--preset", default="standard", help="rules preset (default standard)")
    parser.add_argument(
        "--rounds", default=None, help="rounds per match: full, half, single or k (default full)"
    )
    parser.add_argument("--seed", type=int, default=1, help="first deal seed (default 1)")
    parser.add_argument(
        "--deadline-ms", type=int, default=1000, help="per-decision deadline (default 1000)"
    )
    parser.add_argument(
        "--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)"
    )
    args = parser.parse_args(argv)
    if args.matches < 4 or args.matches % 4:
        parser.error("--matches must be a positive multiple of 4")
    rules_for(args.preset, args.rounds).resolve(4)  # fail early on bad options
    tasks = [
        Task(args.seed + i, rot, args.preset, args.rounds, args.deadline_ms)
        for i in range(args.matches // 4)
        for rot in range(4)
    ]
    start = time.perf_counter()
    results: list[TaskResult] = []
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            for i, res in enumerate(pool.imap(run_task, tasks), 1):
                results.append(res)
                _progress(i, len(tasks), start)
    else:
        for i, task in enumerate(tasks, 1):
            results.append(run_task(task))
            _progress(i, len(tasks), start)
    wall = time.perf_counter() - start
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(
        f"preset {args.preset}, rounds {args.rounds or 'full'}, 4 players, "
        f"deadline {args.deadline_ms} ms, {args.workers} worker(s)"
    )
    print(report(results, wall))
    return 0


def _progress(done: int, total: int, start: float) -> None:
    elapsed = time.perf_counter() - start
    if sys.stderr.isatty():
        print(f"\r{done}/{total} matches, {elapsed:.0f} s", end="", file=sys.stderr, flush=True)
    elif done == total or done % 20 == 0:
        print(f"{done}/{total} matches, {elapsed:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
