"""The live hub: spectators of running matches and of the ladder, fed from the
referee without ever holding it up.

`LiveHub` is the referee's `MatchWatcher` (told on the event loop when a match starts
and ends) and the arena's "match stored" hook. Each viewer has a bounded queue;
publishing is `put_nowait`: a viewer whose queue is full is dropped (its stream ends;
the page reconnects), never waited for. The number of viewers is capped
(`TooManyViewers`), in all and per client address (one client cannot hold every
place and lock the other spectators out).

What a viewer sees is a function of the match's public events alone
(`live.PublicTable`, folded from `public_events`). When it is sent is the hub's own
clock: every `coalesce_s` (0.15 s) one tick looks at the watched matches and sends
each one's new events up to `live.public_cut`; the referee never tells the hub that
a seat is deciding (the watcher has no such call), and a viewer that joins gets its
first snapshot at the next tick, not at a moment it chose. A message is built only
while somebody watches that match, once for all its viewers, so a fast match costs
a few messages a second however fast its bots play.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import math
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import public_events, public_view
from cfarena.engine.state import MatchState
from cfarena.match.record import MatchRecord
from cfarena.server.storage import MatchStatus, StoredMatch
from cfarena.server.web.live import RECENT_EVENTS, PublicTable, live_message, public_cut

MAX_VIEWERS = 200  # SSE streams at once (all pages together)
MAX_PER_CLIENT = 20  # of those, from one client address (IPv6: one /64)
COALESCE_S = 0.15  # the hub's tick: a watched match's changes are sent at most this often
QUEUE_SIZE = 256  # messages a viewer may lag behind before it is dropped
ENDED_KEPT = 256  # matches remembered as ended, not yet stored


class TooManyViewers(Exception):
    """The hub's viewer cap is reached."""


class TooManyFromClient(TooManyViewers):
    """One client address holds its share of the viewers already."""


def client_key(host: str | None) -> str | None:
    """What a client's streams are counted by: its IP address, an IPv6 one by its /64
    (one host may hold a whole /64). None when unknown (not counted per client)."""
    if not host:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.version == 6 and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address.ipv4_mapped or address) if address.version == 6 else str(address)


class Viewer:
    """One SSE stream: a bounded queue of (event name, JSON text); None ends it."""

    def __init__(self, hub: LiveHub, size: int, client: str | None = None) -> None:
        self.hub = hub
        self.client = client  # the client's address key (`client_key`), for its cap
        self.queue: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue(size)
        self.group: set[Viewer] | None = None  # the hub's set it is in
        self.waiting_for: str | None = None  # the match it waits for (`LiveHub._waiting`)
        self.active = True  # counted among the hub's viewers
        self.dropped = False

    def offer(self, kind: str, data: str) -> None:
        """Queue a message, or drop this viewer if it lags too far behind."""
        if not self.active:
            return
        try:
            self.queue.put_nowait((kind, data))
        except asyncio.QueueFull:
            self.dropped = True
            self.close()

    def close(self) -> None:
        """End the stream: after what is queued, or at once when dropped."""
        if not self.active:
            return
        self.hub.forget(self)
        if self.dropped:
            while not self.queue.empty():
                self.queue.get_nowait()
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)

    async def messages(self) -> AsyncIterator[tuple[str, str]]:
        """The stream's messages until it is closed (the caller gone: forgotten)."""
        try:
            while (item := await self.queue.get()) is not None:
                yield item
        finally:
            self.hub.forget(self)


@dataclass
class _Live:
    state: MatchState  # the referee's: only its events are read (`public_events`)
    table: PublicTable  # the public table after `table.count` events: what was sent
    viewers: set[Viewer] = field(default_factory=set)  # sent the table as it is
    joining: set[Viewer] = field(default_factory=set)  # get a snapshot at the next tick


class LiveHub:
    """Watches the referee's matches for the web page's viewers (see the module doc)."""

    def __init__(self, max_viewers: int = MAX_VIEWERS, queue_size: int = QUEUE_SIZE,
                 coalesce_s: float = COALESCE_S, max_per_client: int = MAX_PER_CLIENT
                 ) -> None:
        self.max_viewers = max_viewers
        self.max_per_client = max_per_client
        self._per_client: Counter[str] = Counter()  # viewers now per client address
        self.queue_size = queue_size
        self.coalesce_s = coalesce_s  # <= 0: no clock of its own (tests call `tick`)
        self._live: dict[str, _Live] = {}
        self._waiting: dict[str, set[Viewer]] = {}  # viewers of a match not started yet
        self._ended: dict[str, set[Viewer]] = {}  # ended, not stored yet
        self._ladder: set[Viewer] = set()  # /api/events
        self._ticker: asyncio.TimerHandle | None = None
        self.viewers = 0  # viewers now
        self.dropped = 0  # viewers dropped for lagging (for tests and operators)
        self.messages = 0  # match messages built (for tests)

    # ---------------------------------------------------------------- viewers
    def _new_viewer(self, group: set[Viewer], client: str | None) -> Viewer:
        if self.viewers >= self.max_viewers:
            raise TooManyViewers(f"too many viewers (at most {self.max_viewers})")
        if client is not None:
            if self._per_client[client] >= self.max_per_client:
                raise TooManyFromClient(f"too many live streams from your address (at most "
                                        f"{self.max_per_client})")
            self._per_client[client] += 1
        self.viewers += 1
        viewer = Viewer(self, self.queue_size, client)
        viewer.group = group
        group.add(viewer)
        return viewer

    def forget(self, viewer: Viewer) -> None:
        """Take a viewer out (idempotent)."""
        if not viewer.active:
            return
        viewer.active = False
        self.viewers -= 1
        if viewer.client is not None:
            self._per_client[viewer.client] -= 1
            if not self._per_client[viewer.client]:
                del self._per_client[viewer.client]
        if viewer.dropped:
            self.dropped += 1
        group = viewer.group
        if group is not None:
            group.discard(viewer)
            viewer.group = None
            # the last viewer of a match not started here gone: its key goes too (else
            # one per match played by another arena of the database, for ever)
            match_id = viewer.waiting_for
            if not group and match_id is not None and self._waiting.get(match_id) is group:
                del self._waiting[match_id]

    def watch_ladder(self, client: str | None = None) -> Viewer:
        """A viewer of matches started and ended (the leaderboard); `client`: the
        address key it counts against (`client_key`)."""
        return self._new_viewer(self._ladder, client)

    def watch_match(self, match_id: str, client: str | None = None) -> Viewer:
        """A viewer of one match: a snapshot at the next tick if it is being played,
        then its changes; "ended" when it ends, "stored" when its record is stored."""
        live = self._live.get(match_id)
        if live is not None:
            viewer = self._new_viewer(live.joining, client)
            self._start_ticking()
        elif match_id in self._ended:
            viewer = self._new_viewer(self._ended[match_id], client)
            viewer.offer("ended", json.dumps({"match": match_id}))
        else:
            viewer = self._new_viewer(self._waiting.setdefault(match_id, set()), client)
            viewer.waiting_for = match_id
        return viewer

    def close_all(self) -> None:
        """End every stream (the HTTP server is stopping: its responses may finish)."""
        groups = [self._ladder, *(x.viewers for x in self._live.values()),
                  *(x.joining for x in self._live.values()),
                  *self._waiting.values(), *self._ended.values()]
        for group in groups:
            for viewer in list(group):
                viewer.close()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def forget_waiting(self, match_id: str) -> None:
        """Drop the empty waiting list of a match that is not going to be played."""
        if not self._waiting.get(match_id):
            self._waiting.pop(match_id, None)

    # -------------------------------------------------- the referee's watcher
    def playing(self, match_id: str, state: MatchState) -> None:
        table = PublicTable.start(public_view(state), public_events(state),
                                  state.event_offset)
        live = self._live[match_id] = _Live(state, table)
        waiting = self._waiting.pop(match_id, set())
        for viewer in waiting:
            viewer.group = live.joining
            live.joining.add(viewer)
        if waiting:
            self._start_ticking()
        self._tell_ladder("started", {"match": match_id})

    def ended(self, match_id: str, record: MatchRecord) -> None:
        live = self._live.pop(match_id, None)
        if live is None:
            return
        status = {"match": match_id, "status": record.status.value}
        if live.viewers or live.joining:
            self._publish(live)
            text = json.dumps(status)
            for viewer in list(live.viewers):
                viewer.offer("ended", text)
            self._ended[match_id] = live.viewers
        while len(self._ended) > ENDED_KEPT:  # never stored (the database away for long)
            for viewer in list(self._ended.pop(next(iter(self._ended)))):
                viewer.close()
        self._tell_ladder("ended", status)

    def stored(self, record: StoredMatch) -> None:
        """The arena stored a match's record: its page may show the result now."""
        status = {"match": record.match_id, "status": record.status.value}
        text = json.dumps(status)
        for group in (self._ended.pop(record.match_id, set()),
                      self._waiting.pop(record.match_id, set())):
            for viewer in list(group):
                viewer.offer("stored", text)
                viewer.close()
        kind = "finished" if record.status is MatchStatus.FINISHED else "aborted"
        self._tell_ladder(kind, status)

    # --------------------------------------------------------------- the clock
    def tick(self) -> None:
        """Send every watched match's new public events (the hub's clock calls this
        every `coalesce_s`; tests call it where they want to look)."""
        for live in self._live.values():
            if live.viewers or live.joining:
                self._publish(live)

    def _start_ticking(self) -> None:
        """The next tick, on the loop clock's multiples of `coalesce_s` (a viewer
        cannot choose when the hub looks by choosing when it joins)."""
        if self._ticker is None and self.coalesce_s > 0:
            loop = asyncio.get_running_loop()
            when = (math.floor(loop.time() / self.coalesce_s) + 1) * self.coalesce_s
            self._ticker = loop.call_at(when, self._on_tick)

    def _on_tick(self) -> None:
        self._ticker = None
        self.tick()
        if any(live.viewers or live.joining for live in self._live.values()):
            self._start_ticking()

    # --------------------------------------------------------------- internals
    def _publish(self, live: _Live) -> None:
        """Fold the events up to the public cut into the table; an update to the
        viewers if it moved, a snapshot to those joining."""
        state = live.state
        table = live.table
        sent = table.count
        cut = public_cut(state.events, sent)
        over = state.is_over and cut == len(state.events)
        if cut > sent:
            new = public_events(state, sent)[: cut - sent]
            table.fold(new)
            if live.viewers:
                self._send(live.viewers, "update", live_message(table, new, sent, over))
        if live.joining:
            first = max(0, cut - RECENT_EVENTS)
            recent = public_events(state, first)[: cut - first]
            self._send(live.joining, "snapshot", live_message(table, recent, first, over))
            for viewer in list(live.joining):
                if viewer.active:  # not dropped just now
                    viewer.group = live.viewers
                    live.viewers.add(viewer)
            live.joining.clear()

    def _send(self, viewers: set[Viewer], kind: str, message: dict[str, Any]) -> None:
        text = json.dumps(message)
        self.messages += 1
        for viewer in list(viewers):
            viewer.offer(kind, text)

    def _tell_ladder(self, kind: str, data: dict[str, Any]) -> None:
        if self._ladder:
            text = json.dumps(data)
            for viewer in list(self._ladder):
                viewer.offer(kind, text)

    def running(self) -> list[str]:
        """The ids of the matches being played."""
        return list(self._live)
