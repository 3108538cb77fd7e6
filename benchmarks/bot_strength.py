"""Measure the bundled bots' strength: an in-process round-robin at one 4-player table.

    python benchmarks/bot_strength.py --matches 200          # 50 deal seeds x 4 seat rotations
    python benchmarks/bot_strength.py --matches 40 --rounds 2 --preset maltese

No gRPC: each match is played by `cfarena.sdk.local.play_match`,
under the referee's own match law (forced moves, per-seat turn ids, the time
control, faults and fallbacks), every decision a `Turn` built as the referee
builds it.
Each deal seed is played in all four seat rotations, so every bot gets every
seat's hands (duplicate play). Ratings: a Bradley-Terry fit over all pairwise
results with a 95% bootstrap interval (`cfarena.server.rating.bradley_terry.fit_ratings`)
and the sequential pairwise Elo (`elo_update`) after the last match.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from cfarena.bots import BUNDLED, make_bot
from cfarena.engine import Rules
from cfarena.sdk import TimeControl
from cfarena.sdk.local import play_match

BOT_NAMES: tuple[str, ...] = tuple(BUNDLED)  # weakest to strongest, as registered


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
        time_control=TimeControl(task.deadline_ms),
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
    from cfarena.server.rating.bradley_terry import fit_ratings
    from cfarena.server.rating.elo import elo_update

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
