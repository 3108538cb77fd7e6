"""Play a whole match in-process and return its game log (tests, demos).

No referee, no network: a simple policy decides for every seat, under the
same match law as the referee's (`cfarena.server.law.MatchLaw`: forced moves
are not decisions, each seat's decisions get its own consecutive turn ids, a
faulting seat gets the fallback move and, once it forfeits, plays only
fallbacks); its `MatchRecord` is turned into a log by `record_to_log`.

    log = simulate_log({"preset": "maltese"}, players=3, seed=7)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ParamSpec

from cfarena.engine import Move, MoveKind, Rules
from cfarena.engine.state import MatchState
from cfarena.server.gamelog import record_to_log
from cfarena.server.law import Answer, Decision, MatchLaw, Reply, TimedOut, play_out
from cfarena.server.match_record import MatchRecord, TimeControl

P = ParamSpec("P")
Policy = Callable[[MatchState, Sequence[Move], random.Random], Move]

POLICIES = ("greedy", "random", "first")


def _greedy(state: MatchState, moves: Sequence[Move], rng: random.Random) -> Move:
    """The heaviest play (a just-drawn tile first), like cfarena.bots.greedy."""
    plays = [m for m in moves if m.kind is MoveKind.PLAY and m.tile is not None]
    drawn = state.drawn_tile
    if drawn is not None and any(m.tile == drawn for m in plays):
        plays = [m for m in plays if m.tile == drawn]

    def weight(m: Move) -> tuple[int, int, int]:
        assert m.tile is not None and m.parent is not None
        return (m.tile.pips, m.tile.b, -m.parent)

    return max(plays, key=weight) if plays else moves[0]


def _random(state: MatchState, moves: Sequence[Move], rng: random.Random) -> Move:
    return moves[rng.randrange(len(moves))]


def _first(state: MatchState, moves: Sequence[Move], rng: random.Random) -> Move:
    return moves[0]


_POLICY_FUNCS: dict[str, Policy] = {"greedy": _greedy, "random": _random, "first": _first}


def simulate_record(
    rules_options: Mapping[str, Any],
    players: int,
    seed: int,
    policy: str | Sequence[str] = "greedy",
    *,
    timeouts: Collection[int] = (),
    strikes: int = 1,
    names: Sequence[str] | None = None,
) -> MatchRecord:
    """Play a match to its end; the referee's `MatchRecord` of it.

    `policy` is one name for every seat or one per seat (`greedy`, `random`,
    `first`). `timeouts` are decision numbers (the match's decisions counted
    from 1 over all seats, not turn ids, which count per seat) at which the
    deciding bot "times out": a TIMEOUT fault is recorded and the fallback move
    is played; the seat forfeits after `strikes` faults.
    """
    rules = Rules.from_options(rules_options)
    seat_policies = [policy] * players if isinstance(policy, str) else list(policy)
    if len(seat_policies) != players:
        raise ValueError(f"policy: {len(seat_policies)} policies for {players} players")
    unknown = [p for p in seat_policies if p not in _POLICY_FUNCS]
    if unknown:
        raise ValueError(f"policy: unknown {unknown[0]!r} (known: {', '.join(POLICIES)})")
    funcs = [_POLICY_FUNCS[p] for p in seat_policies]
    tc = TimeControl(move_timeout_ms=1000, strikes=strikes)
    law = MatchLaw(
        f"sim-{rules.name}-{players}p-{seed}",
        rules,
        seed,
        list(names) if names is not None else [f"{p}-{s}" for s, p in enumerate(seat_policies)],
        tc,
    )
    rng = random.Random(seed)
    decisions = 0

    def ask(decision: Decision) -> Reply:
        nonlocal decisions
        decisions += 1
        if decisions in timeouts:
            return TimedOut()
        moves = decision.legal_moves
        started = time.perf_counter()
        move = funcs[decision.seat](law.state, moves, rng)
        return Answer(moves.index(move), (time.perf_counter() - started) * 1000.0)

    return play_out(law, ask)


def _as_log(simulate: Callable[P, MatchRecord]) -> Callable[P, dict[str, Any]]:
    def log(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        return record_to_log(simulate(*args, **kwargs))

    log.__doc__ = f"The game log of a match played in-process (see `{simulate.__name__}`)."
    return log


simulate_log = _as_log(simulate_record)
