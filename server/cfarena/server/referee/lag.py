"""How late the referee itself runs: its stalls are never a bot's time.

A `LoopLag` ticks on the referee's event loop every `period_s`. A tick that comes
more than `margin_s` late means the loop did not run for that long: a callback
blocked it, the machine starved it, or the whole process was frozen (SIGSTOP, a
suspended VM). Each such stall is kept as a span of `time.perf_counter()` time, from
when the tick was due to when it ran plus `recovery_s` (after a stall the loop works
through what piled up meanwhile, the bots' answers among it). A stall still going on
when something asks (the tick is overdue, so whoever asks is the first to run after
it) counts too.

The match runner subtracts the stalls that fall within a decision from the time the
bot is charged, and moves the decision's deadline on by them: a bot gets the time it
would have had from a referee that never stalled (`MatchRunner._ask`). A bot can cause
short stalls itself (below), so what they excuse is bounded: a short stall counts its
lateness only (no recovery), and the short stalls within one decision excuse at most
SHORT_STALLS_SHARE of its allowed time; only a freeze (one unbroken stall of
STALL_ENDS_CONNECTIONS_S or more, longer than any a bot's load was seen to cause)
counts whole, with its recovery. A bot that keeps the cores busy to be excused
gets at most that share more time, and only where its processes can starve the
referee (FAIRPLAY.md).

Only one unbroken stall of STALL_ENDS_CONNECTIONS_S or more is taken to end connections
(a frozen referee: a bot's ping, or the referee's own, went unanswered; a 2.5 s SIGSTOP
of the referee's process makes gRPC send GOAWAY "ping_timeout" on waking): that is what
voids a match whose connection ended with it (`ended_by_stall`). Many short stalls do
not, however much they add up to: a bot can cause those itself (its processes keep the
machine's cores busy, and the referee's loop runs late by a fraction of a second every
few ticks: 0.54 s at most with 30 busy processes of one sandbox on 2 cores), not a
freeze. Not proven for many sandboxes of one entrant busy at once (several matches in
play): a `cpu` cgroup for the sandboxes would bound that (FAIRPLAY.md).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque

PERIOD_S = 0.05
MARGIN_S = 0.1  # later than this is a stall (scheduling jitter under load is not)
RECOVERY_S = 0.25
# a connection that ends during or just after one unbroken stall this long may have
# ended because of it (see the module docstring and `ended_by_stall`)
STALL_ENDS_CONNECTIONS_S = 1.0
SHORT_STALLS_SHARE = 0.25  # of a decision's allowed time, at most excused by short stalls
KEEP_S = 3600.0  # stalls older than this are forgotten (no decision lasts that long)


class LoopLag:
    """The stalls of the running event loop (see the module docstring)."""

    def __init__(self, period_s: float = PERIOD_S, margin_s: float = MARGIN_S,
                 recovery_s: float = RECOVERY_S,
                 ends_connections_s: float = STALL_ENDS_CONNECTIONS_S) -> None:
        self.period_s = period_s
        self.margin_s = margin_s
        self.recovery_s = recovery_s
        self.ends_connections_s = ends_connections_s
        # short stalls: (due, ran), perf_counter, merged where they overlap
        self.stalls: deque[tuple[float, float]] = deque()
        # the single stalls of at least `ends_connections_s`, unmerged: (due, ran)
        self.freezes: deque[tuple[float, float]] = deque()
        self.longest_s = 0.0  # the longest stall seen (metrics, logs)
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Tick on the running loop from now on."""
        if self._handle is None:
            self._arm(time.perf_counter())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, now: float) -> None:
        self._due = now + self.period_s
        self._handle = asyncio.get_running_loop().call_later(self.period_s, self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        if now - self._due > self.margin_s:
            self.longest_s = max(self.longest_s, now - self._due)
            if now - self._due >= self.ends_connections_s:
                self.freezes.append((self._due, now))
            else:
                _add(self.stalls, (self._due, now))
        for spans in (self.stalls, self.freezes):
            while spans and spans[0][1] < now - KEEP_S:
                spans.popleft()
        self._arm(now)

    def stalled(self, since: float, until: float = math.inf,
                short_cap: float = math.inf) -> float:
        """Seconds the referee's stalls excuse between `since` and `until` (perf_counter
        times): its freezes, each with its recovery, a freeze going on now included
        (`until` may be in the future), and its short stalls up to `short_cap`."""
        now = time.perf_counter()
        freezes = [(start, end + self.recovery_s) for start, end in self._freezes(now)]
        short = list(self.stalls)
        if self._handle is not None and self.margin_s < now - self._due < \
                self.ends_connections_s:
            short.append((self._due, now))  # a short stall going on now
        return _overlap(freezes, since, until) + min(short_cap,
                                                     _overlap(short, since, until))

    def froze_since(self, since: float) -> bool:
        """Whether the referee froze (one unbroken stall of `ends_connections_s` or
        more) at any time after `since` (perf_counter), or is frozen now: what went
        wrong with a bot's process meanwhile (it could not connect, its connection
        ended) may be the referee's doing, not the bot's."""
        return any(end >= since for _start, end in self._freezes(time.perf_counter()))

    def ended_by_stall(self, closed_at: float) -> bool:
        """Whether a connection that closed at `closed_at` (perf_counter) may have ended
        because the referee stalled: during one unbroken stall of `ends_connections_s`
        or more, or within twice that after it (what the bot's side saw of a frozen
        referee arrives once it runs again). Shorter stalls never count, however many
        there were (see the module docstring)."""
        return any(start <= closed_at <= end + 2 * self.ends_connections_s
                   for start, end in self._freezes(time.perf_counter()))

    def _freezes(self, now: float) -> list[tuple[float, float]]:
        """The freezes seen, and one going on at `now` (the tick is that overdue: whoever
        asks is the first to run after it) as (due, now)."""
        freezes = list(self.freezes)
        if self._handle is not None and now - self._due >= self.ends_connections_s:
            freezes.append((self._due, now))
        return freezes


def _overlap(spans: list[tuple[float, float]], since: float, until: float) -> float:
    """Seconds of `spans` between `since` and `until`."""
    return sum(max(0.0, min(end, until) - max(start, since)) for start, end in spans)


def _add(spans: deque[tuple[float, float]], span: tuple[float, float]) -> None:
    """Append `span`, merged with the last one if they overlap (a stall within the
    recovery of the one before)."""
    if spans and span[0] <= spans[-1][1]:
        start, end = spans.pop()
        span = (start, max(end, span[1]))
    spans.append(span)
