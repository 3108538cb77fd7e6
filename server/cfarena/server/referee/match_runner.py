"""Running one match over gRPC: the seats' connections around the match law.

The rules (time control, strikes, forfeits, fallbacks, turn numbering, the
record) are `cfarena.match.law.MatchLaw`'s; this module only sends each
decision to its seat as a Turn, waits for the answer against the clock and
hands the law what came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from cfarena.engine import Rules, observe, visible_events
from cfarena.engine.state import MatchState
from cfarena.match.abort_reason import AbortReason
from cfarena.match.law import Answer, Decision, Faulted, MatchLaw, Reply, TimedOut
from cfarena.match.record import FaultKind, MatchRecord, TimeControl
from cfarena.server.referee.connection import BotConnection, PendingTurn, SeatFault
from cfarena.server.referee.lag import SHORT_STALLS_SHARE, LoopLag
from cfarena.server.referee.observer import MatchWatcher
from cfarena.server.wire import encode
from cfarena.server.wire.turn_encoder import TurnEncoder
from cfarena.v1 import arena_pb2 as pb


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
        watcher: MatchWatcher | None = None,
        lag: LoopLag | None = None,
    ) -> None:
        """`lag`: the referee loop's stalls, which no seat is charged (None: none
        measured, every delay is the seat's)."""
        self.match_id = match_id
        self.lag = lag
        self.watcher = watcher
        self.seats = list(seats)
        self.players = len(seats)
        self.law = MatchLaw(match_id, rules, seed, seat_bots, time_control,
                            tournament_id=tournament_id, key=key, initial_state=initial_state)
        self.record: MatchRecord = self.law.record
        self.tc = time_control
        self._rules_proto = encode.rules_to_proto(self.law.state.rules)
        self._encoder = TurnEncoder(match_id)
        self._sent_events = [0] * self.players

    @property
    def state(self) -> MatchState:
        return self.law.state

    # ------------------------------------------------------------------ running
    async def run(self) -> MatchRecord:
        """Play the match; on cancellation the record is marked aborted and re-raised."""
        law = self.law
        law.start()
        watcher = self.watcher
        if watcher is not None:
            watcher.playing(self.match_id, law.state)
        try:
            await self._start()
            while (decision := law.next_decision()) is not None:
                law.reply(await self._ask(decision))
            law.finish()
            await self._send_end()
        except RefereeStalled as stalled:  # void: the match is not the bots' to lose
            law.abort(AbortReason.REFEREE_STALLED.text(str(stalled)))
            await self._send_end()
        except asyncio.CancelledError:
            law.abort(AbortReason.SHUTDOWN.text())
            raise
        except Exception as exc:  # a referee bug must not leave the match half-written
            law.abort(AbortReason.INTERNAL_ERROR.text(f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            for conn in self.seats:
                conn.matches.pop(self.match_id, None)
                conn.pending.pop(self.match_id, None)
            if watcher is not None:
                watcher.ended(self.match_id, self.record)
        return self.record

    async def _start(self) -> None:
        for seat, conn in enumerate(self.seats):
            msg = pb.RefereeMessage(
                match_start=pb.MatchStart(
                    match_id=self.match_id,
                    seat=seat,
                    rules=self._rules_proto,
                    seat_names=self.record.seat_bots,
                    time_control=encode.time_control_to_proto(self.tc),
                    tournament_id=self.record.tournament_id or 0,
                )
            )
            try:
                await conn.send(self.match_id, msg)
            except SeatFault as fault:
                self._void_if_stalled(seat, conn, fault)
                self.law.fault_before_play(seat, fault.kind, fault.detail)

    async def _ask(self, decision: Decision) -> Reply:
        """Send the decision to its seat as a Turn; what came back, for the law. The
        referee's own stalls (`lag`) are neither charged to the seat nor end its time."""
        conn = self.seats[decision.seat]
        pending: PendingTurn | None = None
        try:
            pending = conn.expect(self.match_id, decision.turn_id)
            msg = self._turn_message(decision)
            pending.sent_at = time.perf_counter()
            deadline = _Deadline(pending, decision.allowed_ms / 1000.0, self.lag)
            try:
                conn.post(self.match_id, msg)
                index = await pending.future
            finally:
                deadline.cancel()
                if conn.pending.get(self.match_id) is pending:
                    del conn.pending[self.match_id]
        except _NoAnswer:
            assert pending is not None
            conn.timed_out(self.match_id, pending.turn_id)
            return TimedOut(self._own_ms(pending, time.perf_counter(), decision))
        except SeatFault as fault:
            self._void_if_stalled(decision.seat, conn, fault)
            elapsed = None
            if pending is not None and pending.sent_at:
                elapsed = self._own_ms(pending, time.perf_counter(), decision)
            return Faulted(fault.kind, fault.detail, elapsed)
        return Answer(index, self._own_ms(pending, pending.answered_at, decision))

    def _void_if_stalled(self, seat: int, conn: BotConnection, fault: SeatFault) -> None:
        """RefereeStalled if `fault` is a disconnect the referee's own stall may have
        caused (its connection ended during or just after one)."""
        if fault.kind is FaultKind.DISCONNECT and self.lag is not None \
                and conn.closed and self.lag.ended_by_stall(conn.closed_at):
            raise RefereeStalled(f"seat {seat}'s connection ended as the referee came "
                                 "back from a stall")

    def _own_ms(self, pending: PendingTurn, until: float, decision: Decision) -> float:
        """The seat's own time on a Turn: from its sending to `until`, less what the
        referee's stalls in between excuse (`LoopLag.stalled`)."""
        excused = 0.0 if self.lag is None else self.lag.stalled(
            pending.sent_at, until, short_cap=_short_cap(decision.allowed_ms / 1000.0))
        return max(0.0, until - pending.sent_at - excused) * 1000.0

    def _turn_message(self, decision: Decision) -> bytes:
        seat, state = decision.seat, self.law.state
        start = self._sent_events[seat]
        events = visible_events(state, seat, start)
        self._sent_events[seat] = start + len(events)
        return self._encoder.encode(
            decision.turn_id,
            observe(state, seat),
            events,
            deadline_ms=decision.deadline_ms,
            bank_ms=int(decision.bank_ms),
            legal_moves=decision.legal_moves,
        )

    # ----------------------------------------------------------------- ending
    def abort(self, reason: AbortReason) -> None:
        """Mark the record aborted (if it has not ended): for a match cancelled before
        `run` ever started, which therefore could not mark it itself."""
        self.law.abort(reason.text())

    async def _send_end(self) -> None:
        """MatchEnd to every seat still connected: results and faults, and only
        what the rules reveal at the end (no seed, no deals: in a duplicate
        tournament other matches are dealt the same hands)."""
        rec = self.record
        faults = [encode.fault_to_proto(f) for f in rec.faults]
        for seat, conn in enumerate(self.seats):
            if conn.closed:
                continue
            start = self._sent_events[seat]
            events = visible_events(self.law.state, seat, start)
            msg = pb.RefereeMessage(
                match_end=pb.MatchEnd(
                    match_id=self.match_id,
                    events=[encode.event_to_proto(e, start + i) for i, e in enumerate(events)],
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


class RefereeStalled(Exception):
    """A seat's connection ended during (or just after) a stall of the referee: the
    stall may have ended it, so the match is aborted (`AbortReason.REFEREE_STALLED`),
    not faulted."""


class _NoAnswer(Exception):
    """The decision's time ran out (the law words the TIMEOUT fault)."""


class _Deadline:
    """A Turn's deadline on the loop: `allowed_s` after it was sent, moved on by the
    referee's stalls since (a stall at the deadline is the referee's lateness, and
    the answer may be waiting in the socket: the seat gets what it had left)."""

    def __init__(self, pending: PendingTurn, allowed_s: float, lag: LoopLag | None) -> None:
        self.pending = pending
        self.allowed_s = allowed_s
        self.lag = lag
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(allowed_s, self._due)

    def _due(self) -> None:
        future = self.pending.future
        if future.done():
            return
        if self.lag is not None:
            sent = self.pending.sent_at
            excused = self.lag.stalled(sent, short_cap=_short_cap(self.allowed_s))
            left = sent + self.allowed_s + excused - time.perf_counter()
            if left > 0:
                self._handle = self._loop.call_later(left, self._due)
                return
        future.set_exception(_NoAnswer())

    def cancel(self) -> None:
        self._handle.cancel()


def _short_cap(allowed_s: float) -> float:
    """What the referee's short stalls may excuse of one decision (`lag.py`)."""
    return SHORT_STALLS_SHARE * allowed_s
