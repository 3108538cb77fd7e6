"""Play a whole match in-process under the referee's match law: no referee, no network.

`play_match` seats `Bot`s under `cfarena.match.law.MatchLaw`, the law the
referee runs (forced moves are not decisions, each seat's decisions get its
own consecutive turn ids, the time control is judged on the measured time of
each `choose`, a faulting seat gets the fallback move and, once it forfeits,
plays only fallbacks); every decision gets a `Turn` built as the referee
builds it (observation via `observe`, the events since the seat's previous
Turn via `visible_events`, the accumulated history as the SDK keeps it), and
`on_match_start`, `on_events` and `on_match_end` are called.

Its users: `python -m cfarena.sdk play` (`cfarena.sdk.play`), the server's
`replay/simulate.py`, the benchmarks and the bots' tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from cfarena.engine import Event, MatchState, Rules, observe, visible_events
from cfarena.match.law import Answer, Decision, MatchLaw, Reply, TimedOut, play_out
from cfarena.match.record import MatchRecord
from cfarena.sdk.bot import Bot, decide, resolve_choice
from cfarena.sdk.types import MatchInfo, MatchResult, TimeControl, Turn

log = logging.getLogger("cfarena.sdk")


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
    time_control: TimeControl = TimeControl(),  # noqa: B008 (frozen)
    names: Sequence[str] | None = None,
    on_turn: Callable[[Turn, object], None] | None = None,
    *,
    as_sdk: bool = False,
    timeouts: Collection[int] = (),
) -> PlayedMatch:
    """Play one match in-process under the referee's match law.

    A bot slower than the time control allows times out as it would at the
    referee (a fault, the fallback move; the seat forfeits after
    `time_control.strikes` faults), though its late answer is waited for: a
    `choose` that never returns is not cut off. With `as_sdk` a bot's mistakes
    are treated as `python -m cfarena.sdk run` treats them (a `choose` that
    raises or returns a move not offered is logged and the first offered move
    played; a hook that raises is logged); without it (tests) they propagate, a
    move not offered as IllegalChoiceError. `timeouts` are decision numbers (the
    match's decisions counted from 1 over all seats, not turn ids, which count
    per seat) at which the deciding bot is not asked but times out.
    `on_turn(turn, choice)` (for tests) sees every Turn and the bot's answer.
    """
    players = len(bots)
    seat_names = tuple(names) if names is not None else tuple(type(b).__name__ for b in bots)
    law = MatchLaw(match_id, rules, seed, seat_names, time_control)
    state = law.state

    def hook(fn: Callable[..., object], *args: object) -> None:
        if not as_sdk:
            fn(*args)
            return
        try:
            fn(*args)
        except Exception:
            log.exception("bot hook %s raised", getattr(fn, "__name__", fn))

    for i, bot in enumerate(bots):
        hook(bot.on_match_start, MatchInfo(match_id, i, state.rules, seat_names, time_control))
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
            hook(bot.on_events, match_id, turn.events)
        start = time.perf_counter()
        index: int | None
        if as_sdk:
            index = decide(bot, turn)
            choice: object = moves[index]
        else:
            choice = bot.choose(turn)
            index = resolve_choice(choice, moves)
        elapsed = time.perf_counter() - start
        played.decisions[seat].append(elapsed)
        if on_turn is not None:
            on_turn(turn, choice)
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
            hook(bot.on_events, match_id, events)
        hook(bot.on_match_end, MatchResult(
            match_id=match_id,
            totals=tuple(record.totals),
            ranks=tuple(record.ranks),
            round_scores=tuple(tuple(r) for r in record.round_scores),
            faults=faults,
            forfeited=tuple(record.forfeited),
            reason=record.reason,
            seat=i,
        ))
    return played
