"""Play a whole match in-process, no referee and no network (tests, demos,
benchmarks/bot_strength.py).

`play_match` seats `Bot`s under the referee's own match law
(`cfarena.server.match.law.MatchLaw`: forced moves are not decisions, each seat's
decisions get its own consecutive turn ids, a faulting seat gets the fallback
move and, once it forfeits, plays only fallbacks); every decision gets a `Turn`
built as the referee builds it (observation via `observe`, the events since
the seat's previous Turn via `visible_events`, the accumulated history as the
SDK keeps it), and `on_match_start`, `on_events` and `on_match_end` are called.
`simulate_record` and `simulate_log` play it with a simple policy per seat (the
bundled greedy bot, a random or the first legal move); `record_to_log` makes
the log.

    log = simulate_log({"preset": "maltese"}, players=3, seed=7)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec

from cfarena.bots import make_bot
from cfarena.engine import Event, MatchState, Rules, observe, visible_events
from cfarena.sdk import Bot, MatchInfo, MatchResult, TimeControl, Turn
from cfarena.sdk.bot import resolve_choice
from cfarena.server.match.law import Answer, Decision, MatchLaw, Reply, TimedOut, play_out
from cfarena.server.match.log_format import record_to_log
from cfarena.server.match.record import MatchRecord

P = ParamSpec("P")

POLICIES = ("greedy", "random", "first")


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
    *,
    strikes: int = 1,
    timeouts: Collection[int] = (),
) -> PlayedMatch:
    """Play one match in-process under the referee's match law.

    Raises IllegalChoiceError if a bot returns a move that was not offered. A
    bot slower than `deadline_ms` times out as it would at the referee (a fault,
    the fallback move); a seat forfeits after `strikes` faults. `timeouts` are
    decision numbers (the match's decisions counted from 1 over all seats, not
    turn ids, which count per seat) at which the deciding bot is not asked but
    times out. `on_turn(turn, choice)` (for tests) sees every Turn and the
    bot's raw answer.
    """
    players = len(bots)
    seat_names = tuple(names) if names is not None else tuple(type(b).__name__ for b in bots)
    tc = TimeControl(move_timeout_ms=deadline_ms, strikes=strikes)
    law = MatchLaw(match_id, rules, seed, seat_names, tc)
    state = law.state
    for i, bot in enumerate(bots):
        bot.on_match_start(MatchInfo(match_id, i, state.rules, seat_names, tc))
    sent = [0] * players
    history: list[list[Event]] = [[] for _ in range(players)]
    played = PlayedMatch(state, law.record, [[] for _ in range(players)],
                         [[] for _ in range(players)])

    decisions = 0

    def ask(decision: Decision) -> Reply:
        nonlocal decisions
        decisions += 1
        if decisions in timeouts:
            return TimedOut()
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
    faults = tuple(record.faults)
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


class _RandomMove(Bot):
    """A uniformly random legal move from the match's one generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choose(self, turn: Turn) -> int:
        return self.rng.randrange(len(turn.legal_moves))


class _FirstMove(Bot):
    """The first legal move."""

    def choose(self, turn: Turn) -> int:
        return 0


def _policy_bot(policy: str, rng: random.Random) -> Bot:
    if policy == "greedy":
        return make_bot("greedy")
    return _RandomMove(rng) if policy == "random" else _FirstMove()


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
    is played; the seat forfeits after `strikes` faults (see `play_match`).
    """
    rules = Rules.from_options(rules_options)
    seat_policies = [policy] * players if isinstance(policy, str) else list(policy)
    if len(seat_policies) != players:
        raise ValueError(f"policy: {len(seat_policies)} policies for {players} players")
    unknown = [p for p in seat_policies if p not in POLICIES]
    if unknown:
        raise ValueError(f"policy: unknown {unknown[0]!r} (known: {', '.join(POLICIES)})")
    rng = random.Random(seed)
    if names is None:
        names = [f"{p}-{s}" for s, p in enumerate(seat_policies)]
    played = play_match([_policy_bot(p, rng) for p in seat_policies], rules, seed,
                        f"sim-{rules.name}-{players}p-{seed}", names=names,
                        strikes=strikes, timeouts=timeouts)
    return played.record


def _as_log(simulate: Callable[P, MatchRecord]) -> Callable[P, dict[str, Any]]:
    def log(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        return record_to_log(simulate(*args, **kwargs))

    log.__doc__ = f"The game log of a match played in-process (see `{simulate.__name__}`)."
    return log


simulate_log = _as_log(simulate_record)
