"""Shared heuristics of the sample bots: what the public record says about the other hands.

Everything here reads only what a seat may know (its `Observation` and the
public events of `Turn.history`), so the bots stay honest:

- `match_seed(match_id, seat)`: a stable per-match seed (not salted per process);
- `read_voids(obs, history)`: replays the current round's public events and
  estimates, per seat and value, how sure we are that the seat holds no tile
  of that value (a seat that draws or passes had no legal play: it lacked
  every value it could have played on);
- `TableView`: counts of the own hand, unseen tiles, open ends, and the
  probability that another seat holds a value, used by `SmartBot` and by the
  Monte Carlo bot's move ordering.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from cfarena.engine import Event, EventKind, Observation, PlayDrawn, Tile, full_set

# How much a recorded void weakens each time the seat draws an unknown tile later.
VOID_DECAY_PER_DRAW = 0.6


def match_seed(match_id: str, seat: int, salt: str = "") -> int:
    """A stable 64-bit seed for one seat of one match (unlike hash(), not salted per process)."""
    digest = hashlib.sha256(f"{salt}\x00{match_id}\x00{seat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def tile_value(tile: Tile, double_blank: int) -> int:
    """What a tile left in hand scores: its pips, the 0-0 counting `double_blank`."""
    if tile.a == 0 and tile.b == 0:
        return double_blank
    return tile.a + tile.b


def read_voids(obs: Observation, history: Sequence[Event]) -> list[list[float]]:
    """Per seat and value, the confidence (0..1) that the seat holds no tile of that value.

    Replays the current round's public events (layout only, no hidden facts): a
    DRAW or a PASS without a draw shows the seat had no legal play, so it
    lacked the pending double's value, or, with no double pending, every open
    end value. A later draw adds an unknown tile and weakens what was known.
    Under `play_drawn = "may"` a pass after a draw may hide a kept tile that
    fits, so it only half-counts.
    """
    rules = obs.rules
    players = rules.players
    values = rules.set_size + 1
    voids = [[0.0] * values for _ in range(players)]
    start = None
    for i in range(len(history) - 1, -1, -1):
        event = history[i]
        if event.kind is EventKind.ROUND_START and event.round_index == obs.round_index:
            start = i
            break
    if start is None:
        return voids
    opens: list[int] = []
    caps: list[int] = []
    kids: list[int] = []
    pending: int | None = None
    drew: list[list[int] | None] = [None] * players
    may = rules.play_drawn is PlayDrawn.MAY

    def lacked() -> list[int]:
        if pending is not None:
            return [opens[pending]]
        return sorted({opens[n] for n in range(len(opens)) if kids[n] < caps[n]})

    for event in history[start + 1 :]:
        kind = event.kind
        seat = event.seat
        if kind is EventKind.CENTRE and event.tile is not None:
            opens, caps, kids = [event.tile.a], [rules.spokes], [0]
            pending = 0
        elif not opens or seat is None:
            continue  # setup draws before the centre, or a ROUND_END
        elif kind is EventKind.PLAY and event.tile is not None and event.parent is not None:
            parent = event.parent
            if not (0 <= parent < len(opens)):
                return voids  # inconsistent history: keep what we have
            value = opens[parent]
            kids[parent] += 1
            if kids[parent] >= caps[parent] and pending == parent:
                pending = None
            tile = event.tile
            if tile.is_double:
                opens.append(value)
                caps.append(rules.toes)
                pending = len(opens) - 1
            else:
                opens.append(tile.b if tile.a == value else tile.a)
                caps.append(1)
            kids.append(0)
            drew[seat] = None
        elif kind is EventKind.DRAW:
            row = voids[seat]
            for v in range(values):
                row[v] *= VOID_DECAY_PER_DRAW
            for v in lacked():
                row[v] = 1.0
            drew[seat] = lacked()
        elif kind is EventKind.PASS:
            row = voids[seat]
            seen = drew[seat]
            if seen is None:
                for v in lacked():
                    row[v] = 1.0
            elif may:
                for v in seen:
                    row[v] = min(row[v], 0.5)
            drew[seat] = None
    return voids


class TableView:
    """Counts and estimates about the table from one seat's observation (and history)."""

    __slots__ = (
        "double_blank",
        "doubles_held",
        "hand",
        "hand_count",
        "obs",
        "open_count",
        "p_has",
        "players",
        "seat",
        "unseen_count",
        "unseen_doubles",
        "unseen_total",
        "values",
        "voids",
    )

    def __init__(self, obs: Observation, history: Sequence[Event] = ()) -> None:
        rules = obs.rules
        self.obs = obs
        self.seat = obs.seat
        self.players = rules.players
        self.values = rules.set_size + 1
        self.double_blank = rules.double_blank
        self.hand = obs.hand
        n = self.values
        self.hand_count = [0] * n  # own tiles showing each value
        self.doubles_held = [False] * n
        for t in obs.hand:
            self.hand_count[t.a] += 1
            if t.b != t.a:
                self.hand_count[t.b] += 1
            else:
                self.doubles_held[t.a] = True
        placed = {p.tile for p in obs.layout}
        own = set(obs.hand)
        self.unseen_count = [0] * n  # unseen tiles (other hands + boneyard) showing each value
        self.unseen_doubles = [False] * n
        total = 0
        for t in full_set(rules.set_size):
            if t in placed or t in own:
                continue
            total += 1
            self.unseen_count[t.a] += 1
            if t.b != t.a:
                self.unseen_count[t.b] += 1
            else:
                self.unseen_doubles[t.a] = True
        self.unseen_total = total
        self.open_count = [0] * n  # free slots on open ends of each value
        for p in obs.layout:
            if p.children < p.capacity:
                self.open_count[p.open_value] += p.capacity - p.children
        self.voids = read_voids(obs, history) if history else [[0.0] * n for _ in obs.hand_sizes]
        self.p_has = [[0.0] * n for _ in range(self.players)]
        for s in range(self.players):
            if s == self.seat:
                self.p_has[s] = [1.0 if c else 0.0 for c in self.hand_count]
                continue
            size = obs.hand_sizes[s]
            for v in range(n):
                self.p_has[s][v] = self._p_any(size, self.unseen_count[v]) * (
                    1.0 - self.voids[s][v]
                )

    def _p_any(self, size: int, good: int) -> float:
        """P(a random `size`-subset of the unseen tiles contains one of `good` tiles)."""
        total = self.unseen_total
        if size <= 0 or good <= 0 or total <= 0:
            return 0.0
        if size >= total:
            return 1.0
        miss = 1.0
        for i in range(good):
            remaining = total - i
            if remaining <= size:
                return 1.0
            miss *= (remaining - size) / remaining
        return 1.0 - miss

    def p_holds_tile(self, seat: int) -> float:
        """P(a given unseen tile is in `seat`'s hand) (uniform over the unseen tiles)."""
        if self.unseen_total <= 0 or seat == self.seat:
            return 0.0
        return min(1.0, self.obs.hand_sizes[seat] / self.unseen_total)

    def opponents_in_order(self) -> list[int]:
        """The other seats in playing order, starting after this seat."""
        return [(self.seat + i) % self.players for i in range(1, self.players)]
