"""The match law: one match as the referee runs it, with no I/O.

`MatchLaw` owns the engine state, the time control (per-move timeout, bank,
increment), strikes, forfeits, the fallback move, each seat's turn numbering
and the `MatchRecord` it all produces. It reads no clock but the one it is
given, sends nothing and stores nothing. Everything that plays a match drives
it through one port:

    law.start()
    while (decision := law.next_decision()) is not None:
        law.reply(<the seat's Answer, or TimedOut / Faulted>)
    record = law.finish()

`next_decision` applies forced moves (a DRAW or PASS with no alternative) and
the fallback moves of forfeited seats by itself, and stops at the next seat
that must choose. The drivers: the gRPC referee (`referee/match_runner.py`), the
in-process driver (`cfarena.sdk.local.play_match`, through `play_out`: local
play, the server's `replay/simulate.py`, the benchmarks) and log verification
(`replay/verify.verify_log`), which replays a log's recorded answers and faults
through a fresh law and compares.

The rules (docs/REFEREE.md): a decision may take `move_timeout_ms` plus what is
left of the seat's bank; time over `move_timeout_ms` is drawn from the bank and
every answer in time adds `increment_ms`. An answer beyond that, no answer, a
move index not offered, a protocol error, a disconnect or a sandbox limit is a
fault: the referee plays the fallback move for that turn. A disconnect, a
limit, a fault before play starts, or the seat's `strikes`-th fault forfeits
the match: from then on the seat is never asked again, and ranks last.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cfarena.engine import (
    Move,
    Rules,
    apply_move,
    fallback_move,
    legal_moves,
    needs_decision,
    new_match,
    rank_seats,
)
from cfarena.engine.state import MatchState
from cfarena.match.record import (
    ActionRecord,
    Fault,
    FaultKind,
    MatchRecord,
    MatchStatus,
    TimeControl,
)

DETAIL_LIMIT = 500  # characters of a fault's detail that are kept
# faults that forfeit at once, whatever the strikes allow
FORFEIT_AT_ONCE = frozenset({FaultKind.DISCONNECT, FaultKind.LIMIT})


@dataclass(frozen=True, slots=True)
class Decision:
    """A choice the law asks of a seat: its legal moves and the time it has."""

    seat: int
    turn_id: int  # the seat's own decision number (or, for a format-1 log, the match's)
    legal_moves: tuple[Move, ...]
    deadline_ms: int  # the per-move timeout
    bank_ms: float  # what is left of the seat's bank

    @property
    def allowed_ms(self) -> float:
        """How long the seat may take before it times out."""
        return self.deadline_ms + self.bank_ms


@dataclass(frozen=True, slots=True)
class Answer:
    """The seat chose `legal_moves[move_index]`, `elapsed_ms` after it was asked."""

    move_index: int
    elapsed_ms: float


@dataclass(frozen=True, slots=True)
class TimedOut:
    """No answer within the allowed time (`elapsed_ms`: when that was noticed)."""

    elapsed_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Faulted:
    """The seat faulted while it was asked (protocol error, disconnect, limit, ...)."""

    kind: FaultKind
    detail: str
    elapsed_ms: float | None = None


Reply = Answer | TimedOut | Faulted


def timeout_detail(allowed_ms: float) -> str:
    return f"no answer within {allowed_ms:.0f} ms"


def illegal_detail(decision: Decision, move_index: int) -> str:
    return (f"move_index {move_index} not offered "
            f"(turn {decision.turn_id} offered {len(decision.legal_moves)} moves)")


class MatchLaw:
    """One match under the referee's rules (see the module docstring)."""

    def __init__(
        self,
        match_id: str,
        rules: Rules,
        seed: int,
        seat_bots: Sequence[str],
        time_control: TimeControl,
        *,
        tournament_id: int | None = None,
        key: str | None = None,
        initial_state: MatchState | None = None,
        clock: Callable[[], float] = time.time,
        per_seat_turn_ids: bool = True,
    ) -> None:
        """`initial_state` (e.g. MatchState.from_deal) is for tests and puzzles: such a
        match cannot be re-simulated from its seed alone. `per_seat_turn_ids=False`
        numbers decisions over the whole match, as format-1 logs did; the referee
        always numbers each seat's own decisions (one counter for the match would
        let a seat subtract the others' PLAY events from the gaps and learn how
        often they kept a drawn tile under play_drawn = may)."""
        players = len(seat_bots)
        self._state = initial_state or new_match(rules, players, seed)
        self._tc = time_control
        self._clock = clock
        self._per_seat = per_seat_turn_ids
        self.record = MatchRecord(
            match_id=match_id,
            rules=rules,
            players=players,
            seed=seed,
            seat_bots=list(seat_bots),
            time_control=time_control,
            tournament_id=tournament_id,
            key=key,
        )
        self._strikes = [0] * players
        self._forfeited: set[int] = set()
        self._bank_ms = [float(time_control.bank_ms)] * players
        self._turns = [0] * players
        self._pending: Decision | None = None

    # ------------------------------------------------------------------ reading
    @property
    def state(self) -> MatchState:
        """The engine state (read it; only the law applies moves)."""
        return self._state

    @property
    def time_control(self) -> TimeControl:
        return self._tc

    @property
    def per_seat_turn_ids(self) -> bool:
        """Whether turn ids count each seat's own decisions (else the match's)."""
        return self._per_seat

    @property
    def forfeited(self) -> frozenset[int]:
        return frozenset(self._forfeited)

    def bank_ms(self, seat: int) -> float:
        """What is left of a seat's time bank."""
        return self._bank_ms[seat]

    # ------------------------------------------------------------------ the port
    def start(self) -> None:
        self.record.started_at = self._clock()

    def fault_before_play(self, seat: int, kind: FaultKind, detail: str) -> Fault | None:
        """A seat faulted before it was ever asked (e.g. its MatchStart could not be
        sent): it forfeits. None if it had already forfeited (nothing is recorded)."""
        return self._fault(seat, kind, detail, turn_id=0, forfeit=True)

    def next_decision(self) -> Decision | None:
        """The decision to ask next (the same one until it is replied to), or None
        once the match is over. Forced moves and forfeited seats' moves are
        applied on the way."""
        if self._pending is not None:
            return self._pending
        state = self._state
        while not state.is_over:
            seat = state.current_seat
            assert seat is not None
            moves = legal_moves(state)
            if not needs_decision(moves):
                self._apply(seat, moves[0], decided=False)
            elif seat in self._forfeited:
                self._apply(seat, fallback_move(moves), decided=False, fallback=True)
            else:
                self._pending = Decision(seat, self._next_turn_id(seat), moves,
                                         self._tc.move_timeout_ms, self._bank_ms[seat])
                return self._pending
        return None

    def reply(self, reply: Reply) -> Fault | None:
        """The seat's reply to the pending decision: the move is applied (the fallback
        move if it faulted). Returns the fault it committed, if any."""
        decision = self._pending
        if decision is None:
            raise RuntimeError("no decision is waiting for a reply")
        elapsed = decision.allowed_ms if isinstance(reply, TimedOut) else reply.elapsed_ms
        ms = None if elapsed is None else _checked_ms(elapsed)  # ValueError: still pending
        self._pending = None
        if isinstance(reply, Faulted):
            return self._fallback(decision, reply.kind, reply.detail, ms)
        if isinstance(reply, TimedOut):
            return self._fallback(decision, FaultKind.TIMEOUT,
                                  timeout_detail(decision.allowed_ms), ms)
        assert ms is not None
        if not 0 <= reply.move_index < len(decision.legal_moves):
            return self._fallback(decision, FaultKind.ILLEGAL,
                                  illegal_detail(decision, reply.move_index), ms)
        if ms > decision.allowed_ms:
            return self._fallback(decision, FaultKind.TIMEOUT,
                                  timeout_detail(decision.allowed_ms), ms)
        over = max(0.0, ms - decision.deadline_ms)
        self._bank_ms[decision.seat] = max(0.0, decision.bank_ms - over) + self._tc.increment_ms
        self._apply(decision.seat, decision.legal_moves[reply.move_index], decided=True,
                    elapsed_ms=ms, turn_id=decision.turn_id)
        return None

    def finish(self) -> MatchRecord:
        """The record of a match the rules have ended (forfeited seats rank last)."""
        state, rec = self._state, self.record
        outcome = state.outcome
        if outcome is None:
            raise RuntimeError("the match is not over")
        rec.status = MatchStatus.FINISHED
        rec.reason = outcome.reason.value
        rec.round_scores = [list(r.scores) for r in outcome.rounds]
        rec.totals = list(outcome.totals)
        rec.forfeited = sorted(self._forfeited)
        rec.ranks = list(
            rank_seats(rec.round_scores, state.rules.tie_break, rec.forfeited)
            if rec.forfeited
            else outcome.ranks
        )
        rec.events = list(state.events)
        rec.deals = list(state.deals)
        rec.finished_at = self._clock()
        return rec

    def abort(self, reason: str) -> MatchRecord:
        """Mark the record aborted with what was played so far (no ranks); a record
        that has already ended is left as it is."""
        rec, state = self.record, self._state
        if rec.status is not MatchStatus.RUNNING:
            return rec
        self._pending = None
        rec.status = MatchStatus.ABORTED
        rec.reason = reason
        rec.round_scores = [list(r.scores) for r in state.round_outcomes]
        rec.totals = [sum(r[s] for r in rec.round_scores) for s in range(rec.players)]
        rec.forfeited = sorted(self._forfeited)
        rec.events = list(state.events)
        rec.deals = list(state.deals)
        rec.finished_at = self._clock()
        return rec

    # ------------------------------------------------------------------ inside
    def _next_turn_id(self, seat: int) -> int:
        counter = seat if self._per_seat else 0
        self._turns[counter] += 1
        return self._turns[counter]

    def _fallback(self, decision: Decision, kind: FaultKind, detail: str,
                  elapsed_ms: float | None) -> Fault | None:
        fault = self._fault(decision.seat, kind, detail, turn_id=decision.turn_id)
        self._apply(decision.seat, fallback_move(decision.legal_moves), decided=True,
                    fallback=True, elapsed_ms=elapsed_ms, turn_id=decision.turn_id)
        return fault

    def _apply(self, seat: int, move: Move, *, decided: bool, fallback: bool = False,
               elapsed_ms: float | None = None, turn_id: int | None = None) -> None:
        apply_move(self._state, move)
        self.record.actions.append(
            ActionRecord(seat, move.key, decided, elapsed_ms, turn_id, fallback))

    def _fault(self, seat: int, kind: FaultKind, detail: str, *, turn_id: int,
               forfeit: bool = False) -> Fault | None:
        if seat in self._forfeited:
            return None
        self._strikes[seat] += 1
        forfeit = (forfeit or kind in FORFEIT_AT_ONCE
                   or self._strikes[seat] >= max(1, self._tc.strikes))
        fault = Fault(seat, kind, detail[:DETAIL_LIMIT], turn_id, forfeit)
        self.record.faults.append(fault)
        if forfeit:
            self._forfeited.add(seat)
        return fault


def _checked_ms(value: float) -> float:
    """A measured time as the law keeps it: in ms, rounded to the microsecond, as
    the log writes it (so a replayed log is judged on exactly what was judged)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"a time must be a finite number of ms >= 0, got {value!r}")
    return round(float(value), 3)


def play_out(law: MatchLaw, ask: Callable[[Decision], Reply]) -> MatchRecord:
    """Play a match to its end in-process: `ask` replies to every decision."""
    law.start()
    while (decision := law.next_decision()) is not None:
        law.reply(ask(decision))
    return law.finish()
