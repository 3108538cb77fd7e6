"""Running one match: the engine, the seats' connections, time control and faults."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import (
    Event,
    Move,
    Rules,
    apply_move,
    fallback_move,
    legal_moves,
    needs_decision,
    new_match,
    observe,
    rank_seats,
    visible_events,
)
from cfarena.engine.dealing import RoundDeal
from cfarena.engine.match import MatchState
from cfarena.sdk.types import Fault as SdkFault
from cfarena.server.referee.connection import BotConnection, PendingTurn, SeatFault
from cfarena.server.referee.faults import Fault, FaultKind
from cfarena.server.wire import encode as convert
from cfarena.server.wire.turn_encoder import TurnEncoder
from cfarena.v1 import arena_pb2 as pb


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Per-decision deadline, optional bank (base + increment) and strikes."""

    move_timeout_ms: int = 1000
    bank_ms: int = 0
    increment_ms: int = 0
    strikes: int = 1  # faults that forfeit the match; earlier ones cost only that turn

    def to_proto(self) -> pb.TimeControl:
        return pb.TimeControl(
            move_timeout_ms=self.move_timeout_ms,
            bank_ms=self.bank_ms,
            increment_ms=self.increment_ms,
            strikes=self.strikes,
        )


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One applied move: who, what, whether a bot chose it, and how long it took."""

    seat: int
    move: str  # Move.key
    decided: bool  # True if the bot was asked; False for forced moves and fallbacks
    elapsed_ms: float | None  # the bot's answer time, measured at the referee
    turn_id: int | None  # the seat's own Turn number (1, 2, ... per seat); None if not asked
    fallback: bool = False  # played by the referee for a faulted/forfeited seat

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seat": self.seat, "move": self.move}
        if self.decided:
            out["turn_id"] = self.turn_id
            out["ms"] = None if self.elapsed_ms is None else round(self.elapsed_ms, 3)
        if self.fallback:
            out["fallback"] = True
        return out


@dataclass
class MatchRecord:
    """Everything about a played (or aborted) match: enough to re-simulate it."""

    match_id: str
    rules: Rules
    players: int
    seed: int
    seat_bots: list[str]
    time_control: TimeControl
    status: str = "running"  # "finished" | "aborted"
    reason: str = ""
    totals: list[int] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    round_scores: list[list[int]] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    deals: list[RoundDeal] = field(default_factory=list)
    started_at: float = 0.0
    finished_at: float = 0.0
    tournament_id: int | None = None
    key: str | None = None

    def finish(self, state: MatchState, forfeited: set[int]) -> None:
        """Fill in the result of a match the engine has ended (forfeits rank last)."""
        outcome = state.outcome
        assert outcome is not None
        self.status = "finished"
        self.reason = outcome.reason.value
        self.round_scores = [list(r.scores) for r in outcome.rounds]
        self.totals = list(outcome.totals)
        self.forfeited = sorted(forfeited)
        self.ranks = list(
            rank_seats(self.round_scores, state.rules.tie_break, self.forfeited)
            if self.forfeited
            else outcome.ranks
        )
        self.events = list(state.events)
        self.deals = list(state.deals)
        self.finished_at = time.time()


class MatchRunner:
    """Plays one match to the end against the seats' connections."""

    def __init__(
        self,
        match_id: str,
        rules: Rules,
        seed: int,
        seats: Sequence[BotConnection],
        seat_bots: Sequence[str],
        time_control: TimeControl,
        tournament_id: int | None = None,
        key: str | None = None,
        initial_state: MatchState | None = None,
    ) -> None:
        self.match_id = match_id
        self.seats = list(seats)
        self.players = len(seats)
        # `initial_state` (e.g. MatchState.from_deal) is for tests and puzzles;
        # such a match is not re-simulatable from its seed alone
        self.state: MatchState = initial_state or new_match(rules, self.players, seed)
        self.tc = time_control
        self.record = MatchRecord(
            match_id=match_id,
            rules=rules,
            players=self.players,
            seed=seed,
            seat_bots=list(seat_bots),
            time_control=time_control,
            tournament_id=tournament_id,
            key=key,
        )
        self._rules_proto = convert.rules_to_proto(self.state.rules)
        self._encoder = TurnEncoder(match_id)
        self._sent_events = [0] * self.players
        self._strikes = [0] * self.players
        self._forfeited: set[int] = set()
        self._bank_ms = [float(time_control.bank_ms)] * self.players
        # Turn ids count each seat's own Turns: one counter for the match would
        # let a seat subtract the others' PLAY events from the gaps and learn
        # how often they chose to keep a drawn tile (play_drawn = may)
        self._turns = [0] * self.players

    # ------------------------------------------------------------------ running
    async def run(self) -> MatchRecord:
        """Play the match; on cancellation the record is marked aborted and re-raised."""
        rec = self.record
        rec.started_at = time.time()
        try:
            await self._start()
            state = self.state
            while not state.is_over:
                seat = state.current_seat
                assert seat is not None
                moves = legal_moves(state)
                if not needs_decision(moves):
                    self._apply(seat, moves[0], decided=False)
                elif seat in self._forfeited:
                    self._apply(seat, fallback_move(moves), decided=False, fallback=True)
                else:
                    await self._decide(seat, moves)
            self._finish()
            await self._send_end()
        except asyncio.CancelledError:
            self._abort("aborted: referee shutting down")
            raise
        except Exception as exc:  # a referee bug must not leave the match half-written
            self._abort(f"aborted: internal error {type(exc).__name__}: {exc}")
            raise
        finally:
            for conn in self.seats:
                conn.matches.pop(self.match_id, None)
                conn.pending.pop(self.match_id, None)
        return rec

    async def _start(self) -> None:
        for seat, conn in enumerate(self.seats):
            msg = pb.RefereeMessage(
                match_start=pb.MatchStart(
                    match_id=self.match_id,
                    seat=seat,
                    rules=self._rules_proto,
                    seat_names=self.record.seat_bots,
                    time_control=self.tc.to_proto(),
                    tournament_id=self.record.tournament_id or 0,
                )
            )
            try:
                await conn.send(self.match_id, msg)
            except SeatFault as fault:
                self._fault(seat, fault.kind, fault.detail, forfeit=True)

    def _next_turn_id(self, seat: int) -> int:
        self._turns[seat] += 1
        return self._turns[seat]

    async def _decide(self, seat: int, moves: tuple[Move, ...]) -> None:
        conn = self.seats[seat]
        turn_id = self._next_turn_id(seat)
        allowed_ms = self.tc.move_timeout_ms + self._bank_ms[seat]
        pending: PendingTurn | None = None
        try:
            pending = conn.expect(self.match_id, turn_id, len(moves))
            msg = self._turn_message(seat, moves, turn_id, allowed_ms)
            loop = asyncio.get_running_loop()
            pending.sent_at = time.perf_counter()
            timer = loop.call_later(allowed_ms / 1000.0, _expire, pending.future, allowed_ms)
            try:
                conn.post(self.match_id, msg)
                index = await pending.future
            finally:
                timer.cancel()
                if conn.pending.get(self.match_id) is pending:
                    del conn.pending[self.match_id]
        except SeatFault as fault:
            elapsed = None
            if pending is not None and pending.sent_at:
                elapsed = (time.perf_counter() - pending.sent_at) * 1000.0
            self._fault(seat, fault.kind, fault.detail, turn_id=turn_id)
            self._apply(seat, fallback_move(moves), decided=True, fallback=True,
                        elapsed_ms=elapsed, turn_id=turn_id)
            return
        elapsed_ms = (pending.answered_at - pending.sent_at) * 1000.0
        if self.tc.bank_ms or self.tc.increment_ms:
            over = max(0.0, elapsed_ms - self.tc.move_timeout_ms)
            self._bank_ms[seat] = max(0.0, self._bank_ms[seat] - over) + self.tc.increment_ms
        self._apply(seat, moves[index], decided=True, elapsed_ms=elapsed_ms, turn_id=turn_id)

    def _turn_message(
        self, seat: int, moves: tuple[Move, ...], turn_id: int, allowed_ms: float
    ) -> bytes:
        start = self._sent_events[seat]
        events = visible_events(self.state, seat, start)
        self._sent_events[seat] = start + len(events)
        return self._encoder.encode(
            turn_id,
            observe(self.state, seat),
            events,
            deadline_ms=self.tc.move_timeout_ms,
            bank_ms=int(self._bank_ms[seat]),
            legal_moves=moves,
        )

    def _apply(
        self,
        seat: int,
        move: Move,
        *,
        decided: bool,
        fallback: bool = False,
        elapsed_ms: float | None = None,
        turn_id: int | None = None,
    ) -> None:
        apply_move(self.state, move)
        self.record.actions.append(
            ActionRecord(seat, move.key, decided, elapsed_ms, turn_id, fallback)
        )

    def _fault(
        self, seat: int, kind: FaultKind, detail: str, *, turn_id: int = 0, forfeit: bool = False
    ) -> bool:
        """Record a fault; returns whether the seat now forfeits the match."""
        if seat in self._forfeited:
            return True
        self._strikes[seat] += 1
        forfeit = (
            forfeit
            or kind in (FaultKind.DISCONNECT, FaultKind.LIMIT)
            or self._strikes[seat] >= max(1, self.tc.strikes)
        )
        self.record.faults.append(Fault(seat, kind, detail[:500], turn_id, forfeit))
        if forfeit:
            self._forfeited.add(seat)
        return forfeit

    # ----------------------------------------------------------------- ending
    def _finish(self) -> None:
        self.record.finish(self.state, self._forfeited)

    def abort(self, reason: str) -> None:
        """Mark the record aborted (if it has not ended): for a match cancelled before
        `run` ever started, which therefore could not mark it itself."""
        self._abort(reason)

    def _abort(self, reason: str) -> None:
        rec, state = self.record, self.state
        if rec.status != "running":
            return
        rec.status = "aborted"
        rec.reason = reason
        rec.round_scores = [list(r.scores) for r in state.round_outcomes]
        rec.totals = [sum(r[s] for r in rec.round_scores) for s in range(self.players)]
        rec.forfeited = sorted(self._forfeited)
        rec.events = list(state.events)
        rec.deals = list(state.deals)
        rec.finished_at = time.time()

    async def _send_end(self) -> None:
        """MatchEnd to every seat still connected: results and faults, and only
        what the rules reveal at the end (no seed, no deals: in a duplicate
        tournament other matches are dealt the same hands)."""
        rec = self.record
        faults = [
            convert.fault_to_proto(SdkFault(f.seat, f.kind, f.detail, f.turn_id))
            for f in rec.faults
        ]
        for seat, conn in enumerate(self.seats):
            if conn.closed:
                continue
            start = self._sent_events[seat]
            events = visible_events(self.state, seat, start)
            msg = pb.RefereeMessage(
                match_end=pb.MatchEnd(
                    match_id=self.match_id,
                    events=[convert.event_to_proto(e, start + i) for i, e in enumerate(events)],
                    totals=rec.totals,
                    ranks=rec.ranks,
                    round_scores=[pb.RoundScores(scores=r) for r in rec.round_scores],
                    faults=faults,
                    forfeited=rec.forfeited,
                    reason=rec.reason,
                )
            )
            # the match is over; a bot gone by now loses nothing
            with contextlib.suppress(SeatFault):
                await conn.send(self.match_id, msg)


def _expire(future: asyncio.Future[int], allowed_ms: float) -> None:
    if not future.done():
        future.set_exception(SeatFault(FaultKind.TIMEOUT, f"no answer within {allowed_ms:.0f} ms"))
