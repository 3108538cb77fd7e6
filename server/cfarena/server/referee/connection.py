"""One bot's stream: sending referee messages, routing its Actions to matches."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cfarena.match.record import FaultKind
from cfarena.server.referee.tokens import SeatPass
from cfarena.v1 import arena_pb2 as pb

_ids = itertools.count(1)
# a connection that let a Turn time out is not offered for a new match until it
# answers that Turn (late) or this long has passed (a frozen bot's connection is
# dropped by the keepalive well before: transport.Keepalive)
UNANSWERED_GRACE_S = 60.0
# a pass connection's stream, its match over, is ended only once the bot has answered
# a Turn it let time out, or this long after the match: a write on a stream the referee
# has ended fails in the bot's gRPC, which then reports the stream as INTERNAL (and the
# bot would reconnect with its spent pass)
LATE_ANSWER_WAIT_S = 2.0


class SeatFault(Exception):
    """Raised into a match when its seat's connection faulted or answered wrongly."""

    def __init__(self, kind: FaultKind, detail: str) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail


class _Writer(Protocol):
    async def write(self, message: Any) -> None: ...


@dataclass(slots=True)
class PendingTurn:
    """A Turn sent to the bot and not answered yet."""

    turn_id: int
    future: asyncio.Future[int]
    sent_at: float = 0.0
    answered_at: float = 0.0


@dataclass(eq=False)
class BotConnection:
    """A connected bot stream: capacity, its matches, and its unanswered Turns."""

    bot_name: str
    capacity: int
    writer: _Writer
    conn_id: int = field(default_factory=lambda: next(_ids))
    client: str = ""
    # the version its Hello reported ("" if none), and the hash of the token it
    # connected with ("" for a one-time pass): the arena rates per version and
    # closes the connections of a revoked token
    version: str = ""
    token_hash: str = ""
    # why the referee ended this stream itself (a gRPC status code and details),
    # e.g. its token was revoked; see `kick`
    kicked: tuple[Any, str] | None = None
    # the one-time pass it connected with (a process the arena started), if any
    seat_pass: SeatPass | None = None
    # match_id -> seat, for matches this connection is seated in
    matches: dict[str, int] = field(default_factory=dict)
    pending: dict[str, PendingTurn] = field(default_factory=dict)
    # match_id -> (turn_id, time.monotonic()) of Turns it let time out and has not
    # answered since (see `free`)
    overdue: dict[str, tuple[int, float]] = field(default_factory=dict)
    closed: bool = False
    close_reason: tuple[FaultKind, str] = (FaultKind.DISCONNECT, "stream closed")
    closed_at: float = 0.0  # time.perf_counter() when it closed
    # test hook: called with (match_id, seat, serialized bytes) for every message sent
    on_send: Callable[[str, int, bytes], None] | None = None
    # Outgoing messages, written in order by one drain task at a time. A Turn is
    # posted without waiting for gRPC to report the write complete: that report
    # comes ~1 ms after the bytes left, often after the bot has answered, and
    # the match should go on as soon as the answer is in.
    _outbox: deque[tuple[Any, asyncio.Future[None] | None]] = field(default_factory=deque)
    _drainer: asyncio.Task[None] | None = None
    _closed_event: asyncio.Event = field(default_factory=asyncio.Event)
    _retired: asyncio.Event = field(default_factory=asyncio.Event)
    _kicked_event: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def free(self) -> int:
        """Matches it can be seated in now: none while it is closed, or not answering
        (a Turn it let time out is unanswered, for up to UNANSWERED_GRACE_S)."""
        if self.closed or self.unanswering:
            return 0
        return self.capacity - len(self.matches)

    @property
    def unanswering(self) -> bool:
        """Whether a Turn it let time out is still unanswered (within the grace)."""
        if not self.overdue:
            return False
        now = time.monotonic()
        for match_id, (_turn, when) in list(self.overdue.items()):
            if now - when >= UNANSWERED_GRACE_S:
                del self.overdue[match_id]
        return bool(self.overdue)

    def timed_out(self, match_id: str, turn_id: int) -> None:
        """Its Turn `turn_id` of `match_id` timed out: not seated again until it
        answers that Turn (or a later one of that match) or the grace passes."""
        self.overdue[match_id] = (turn_id, time.monotonic())

    def post(self, match_id: str, message: pb.RefereeMessage | bytes) -> None:
        """Queue one message (or its serialized bytes) without waiting for the write.

        SeatFault if the stream is gone; a write that fails later closes the
        connection, which faults every Turn still waiting on it.
        """
        self._enqueue(match_id, message, None)

    async def send(self, match_id: str, message: pb.RefereeMessage | bytes) -> None:
        """Write one message and wait until gRPC has taken it; SeatFault if the stream is gone."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(match_id, message, done)
        await done

    def _enqueue(self, match_id: str, message: pb.RefereeMessage | bytes,
                 done: asyncio.Future[None] | None) -> None:
        if self.closed:
            raise SeatFault(*self.close_reason)
        if self.on_send is not None:
            data = message if isinstance(message, bytes) else message.SerializeToString()
            self.on_send(match_id, self.matches.get(match_id, -1), data)
        self._outbox.append((message, done))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        outbox = self._outbox
        while outbox and not self.closed:
            message, done = outbox.popleft()
            try:
                await self.writer.write(message)
            except Exception as exc:  # the stream broke under us
                self.close(FaultKind.DISCONNECT, f"write failed: {type(exc).__name__}")
                if done is not None and not done.done():
                    done.set_exception(SeatFault(*self.close_reason))
                return
            if done is not None and not done.done():
                done.set_result(None)

    def expect(self, match_id: str, turn_id: int) -> PendingTurn:
        """Register the Turn about to be sent, so its Action can be routed."""
        if self.closed:
            raise SeatFault(*self.close_reason)
        pending = PendingTurn(turn_id, asyncio.get_running_loop().create_future())
        self.pending[match_id] = pending
        return pending

    def on_action(self, action: pb.Action) -> str | None:
        """Route an Action; returns a notice text when it was ignored, else None.

        An Action that answers no waiting Turn is ignored with a notice and is
        not a fault: one for a match this connection is not seated in, one
        after the Turn was settled (a second answer, a late answer after a
        timeout), or one whose turn_id is not the waiting Turn's (a stale
        answer that crossed a newer Turn on the wire). None of them can affect
        another seat or match, and a bot racing a deadline over a network may
        send one in good faith. The waiting Turn's answer goes to its match,
        whose law makes an out-of-range move index an ILLEGAL fault.
        """
        now = time.perf_counter()
        overdue = self.overdue.get(action.match_id)
        late = overdue is not None and action.turn_id >= overdue[0]
        if late:
            del self.overdue[action.match_id]  # it answers again
        pending = self.pending.get(action.match_id)
        waiting = action.match_id in self.matches and pending is not None \
            and not pending.future.done()
        if late and not (waiting and pending is not None and action.turn_id == pending.turn_id):
            return (f"ignored: your answer to turn {action.turn_id} of match "
                    f"{action.match_id!r} came after its deadline (it had timed out)")
        if action.match_id not in self.matches:
            return f"ignored: you have no seat in match {action.match_id!r}"
        if pending is None or pending.future.done():
            return f"ignored: no turn of match {action.match_id!r} is waiting for an answer"
        if action.turn_id != pending.turn_id:
            return (
                f"ignored: turn_id {action.turn_id} is not the pending turn "
                f"{pending.turn_id} of match {action.match_id!r}"
            )
        del self.pending[action.match_id]
        pending.answered_at = now
        pending.future.set_result(action.move_index)  # the match law judges the index
        return None

    def close(self, kind: FaultKind, detail: str) -> None:
        """Mark the stream dead; every waiting Turn gets the fault."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = (kind, detail)
        self.closed_at = time.perf_counter()
        for pending in self.pending.values():
            if not pending.future.done():
                pending.future.set_exception(SeatFault(kind, detail))
        self.pending.clear()
        while self._outbox:
            _message, done = self._outbox.popleft()
            if done is not None and not done.done():
                done.set_exception(SeatFault(kind, detail))
        self._closed_event.set()

    def kick(self, status: Any, detail: str) -> None:
        """End this stream from the referee's side with a gRPC `status` (a
        grpc.StatusCode) and `detail`: its seats fault (`disconnect`, `detail`) at once
        and the bot's stream ends with that status."""
        if self.kicked is None:
            self.kicked = (status, detail)
        self.close(FaultKind.DISCONNECT, detail)
        self._kicked_event.set()

    async def wait_kicked(self) -> None:
        await self._kicked_event.wait()

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    def retire(self) -> None:
        """The one match of a pass connection is over: end its stream (status OK) once
        the bot has answered a Turn it let time out (for up to LATE_ANSWER_WAIT_S) and
        what is queued (the MatchEnd, a notice) is written, so the bot can exit by
        itself."""
        self._retired.set()

    async def wait_retired(self) -> None:
        await self._retired.wait()
        late_by = time.monotonic() + LATE_ANSWER_WAIT_S
        while self.overdue and not self.closed and time.monotonic() < late_by:
            await asyncio.sleep(0.01)
        while (self._outbox or (self._drainer is not None and not self._drainer.done())) \
                and not self.closed:
            await asyncio.sleep(0.005)
