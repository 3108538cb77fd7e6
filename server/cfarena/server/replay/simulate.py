"""Play a whole match in-process and return its game log (tests, demos).

No referee, no network: a simple policy (the bundled greedy bot, random or
the first legal move) decides for every seat, under the
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

from cfarena.bots import make_bot
from cfarena.engine import Rules, observe, visible_events
from cfarena.engine.state import MatchState
from cfarena.sdk.bot import resolve_choice
from cfarena.sdk.types import Turn
from cfarena.server.gamelog import record_to_log
from cfarena.server.law import Answer, Decision, MatchLaw, Reply, TimedOut, play_out
from cfarena.server.match_record import MatchRecord, TimeControl

P = ParamSpec("P")
# a seat's player: the index of the legal move it picks (-1: none of them)
Policy = Callable[[MatchState, Decision, random.Random], int]

POLICIES = ("greedy", "random", "first")


def _bundled(name: str, match_id: str) -> Policy:
    """The bundled bot `name` (`cfarena.bots.BUNDLED`) for one seat: each decision
    reaches its `choose` as the Turn the SDK would have built (no match start or
    end: the bots used here need neither)."""
    bot = make_bot(name)
    seen = 0

    def choose(state: MatchState, decision: Decision, rng: random.Random) -> int:
        nonlocal seen
        history = tuple(visible_events(state, decision.seat))
        turn = Turn(match_id=match_id, turn_id=decision.turn_id,
                    observation=observe(state, decision.seat),
                    legal_moves=decision.legal_moves, events=history[seen:], history=history,
                    deadline_ms=decision.deadline_ms, bank_ms=int(decision.bank_ms),
                    received_at=time.monotonic())
        seen = len(history)
        index = resolve_choice(bot.choose(turn), decision.legal_moves)
        return -1 if index is None else index

    return choose


def _random(state: MatchState, decision: Decision, rng: random.Random) -> int:
    return rng.randrange(len(decision.legal_moves))


def _first(state: MatchState, decision: Decision, rng: random.Random) -> int:
    return 0


_POLICY_MAKERS: dict[str, Callable[[str], Policy]] = {
    "greedy": lambda match_id: _bundled("greedy", match_id),
    "random": lambda match_id: _random,
    "first": lambda match_id: _first,
}


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
    unknown = [p for p in seat_policies if p not in _POLICY_MAKERS]
    if unknown:
        raise ValueError(f"policy: unknown {unknown[0]!r} (known: {', '.join(POLICIES)})")
    match_id = f"sim-{rules.name}-{players}p-{seed}"
    funcs = [_POLICY_MAKERS[p](match_id) for p in seat_policies]
    tc = TimeControl(move_timeout_ms=1000, strikes=strikes)
    law = MatchLaw(
        match_id,
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
        started = time.perf_counter()
        index = funcs[decision.seat](law.state, decision, rng)
        return Answer(index, (time.perf_counter() - started) * 1000.0)

    return play_out(law, ask)


def _as_log(simulate: Callable[P, MatchRecord]) -> Callable[P, dict[str, Any]]:
    def log(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        return record_to_log(simulate(*args, **kwargs))

    log.__doc__ = f"The game log of a match played in-process (see `{simulate.__name__}`)."
    return log


simulate_log = _as_log(simulate_record)
