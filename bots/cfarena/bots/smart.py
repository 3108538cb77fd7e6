"""SmartBot: hand-tuned Chicken Foot heuristics, deterministic.

Every legal move gets a score in rough "points saved" units and the best one
is played (ties broken by the canonical move order, so the bot is
deterministic). The score adds up:

- shedding: the pips the tile takes out of the hand (the 0-0 counts its
  `double_blank` value), weighted up as the round nears its end (an opponent
  low on tiles), plus a little for every tile played at all;
- doubles: a double is hard to place, so playing it is worth extra, but only
  if the bot can feed it (it holds more tiles of that value) — its toes must
  be filled before play goes elsewhere — and more so when the next seats are
  likely short of the value (they drew or passed on it before: see
  `_features.read_voids`); opening a double nobody can feed costs;
- ends: a new open end of a value the bot holds many of is good (it can follow
  up); an end that lets the bot play its own double later is better; an end
  whose double is unseen (someone may plant it and make the bot feed it) is
  risky when the bot holds nothing of that value; a 0 end is good when the bot
  holds the 0-0 and bad when the 0-0 is unseen;
- suits: tiles of a value whose double the bot still holds are kept to answer
  that double later;
- dead tiles: a tile whose values have few open ends and few unseen tiles left
  to create one is played while it still can be;
- blocking: when an opponent is low on tiles, new ends of values it likely
  lacks are preferred and ends it likely holds are avoided (and consuming one
  such end is rewarded).

Under `play_drawn = "may"` passing (keeping the drawn tile) scores 0, so a
drawn tile is kept only when every way to play it scores worse (e.g. a low
tile whose end would let the next seats plant a double).

    python -m cfarena.sdk run cfarena.bots.smart --token T
    python -m cfarena.bots.smart --token T
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.bots._features import TableView, tile_value
from cfarena.engine import Event, Move, MoveKind, Observation
from cfarena.sdk import Bot, Turn
from cfarena.sdk.cli import run_main

# Weights (points-ish). Tuned against GreedyBot with benchmarks/bot_strength.py.
W_PIP = 1.0  # per pip shed
W_TILE = 2.0  # per tile shed (getting closer to going out)
W_DOUBLE = 4.0  # a double is hard to place: playing it is worth extra
W_DOUBLE_FEED = 2.5  # per own follow-up tile of the double's value (up to 2)
W_DOUBLE_UNFED = 5.0  # opening a double without any own tile to feed it
W_DOUBLE_SHORT = 2.0  # per following seat that likely lacks the double's value
W_SELF_END = 1.0  # per own tile (up to 3) matching a new open end
W_OWN_DOUBLE_END = 3.0  # a new end on which the bot can play its own double
W_DOUBLE_RISK = 3.0  # a new end whose double is unseen and the bot cannot feed
W_SUIT = 1.5  # playing a tile of a value whose double the bot keeps
W_DEAD = 0.25  # per pip of a tile that may soon be unplayable
W_BLOCK = 6.0  # per "danger" of an opponent that could use a new end
W_ZERO_END = 0.12  # times double_blank: a 0 end with the 0-0 in hand / unseen


def _danger(hand_size: int) -> float:
    """How close a seat is to going out (1 with one tile left, 0 from five up)."""
    return {1: 1.0, 2: 0.6, 3: 0.3, 4: 0.1}.get(hand_size, 0.0)


class SmartPolicy:
    """The scoring function behind SmartBot (also used by MonteCarloBot to order moves)."""

    def __init__(self, obs: Observation, history: Sequence[Event] = ()) -> None:
        self.obs = obs
        self.view = TableView(obs, history)
        view = self.view
        opponents = view.opponents_in_order()
        self.opponents = opponents
        self.min_opp = min((obs.hand_sizes[s] for s in opponents), default=99)
        # shedding matters more when the round may end soon
        self.urgency = 1.0 + 1.5 * _danger(self.min_opp) + 0.5 * _danger(len(obs.hand))

    def score(self, move: Move) -> float:
        """The heuristic value of one legal move (PASS/DRAW score 0)."""
        obs = self.obs
        if move.kind is not MoveKind.PLAY or move.tile is None or move.parent is None:
            return 0.0
        view = self.view
        tile = move.tile
        parent = obs.layout[move.parent]
        v = parent.open_value
        count = view.hand_count.copy()
        count[tile.a] -= 1
        if tile.b != tile.a:
            count[tile.b] -= 1
        value = tile_value(tile, view.double_blank)
        s = W_PIP * value * self.urgency + W_TILE

        # tiles that may become unplayable: few ends and few unseen tiles to make one
        ends = view.open_count[tile.a] + (view.open_count[tile.b] if tile.b != tile.a else 0)
        makers = view.unseen_count[tile.a] + view.unseen_count[tile.b]
        if ends <= 1 and makers <= 3:
            s += W_DEAD * value

        if tile.is_double:
            x = v
            k = count[x]
            s += W_DOUBLE
            if k == 0:
                s -= W_DOUBLE_UNFED
            else:
                s += W_DOUBLE_FEED * min(k, 2)
            # the next seats must feed it or draw
            short = 0.0
            for o in self.opponents[: obs.rules.toes]:
                short += 1.0 - view.p_has[o][x]
            s += W_DOUBLE_SHORT * short * (1.0 if k else 0.4)
            new_end = x
        else:
            w = tile.b if tile.a == v else tile.a
            new_end = w
            s += W_SELF_END * min(count[w], 3)
            if view.doubles_held[w]:
                s += W_OWN_DOUBLE_END * (1.0 if count[w] >= 2 else 0.5)
            elif view.unseen_doubles[w] and count[w] == 0:
                p_double = sum(view.p_holds_tile(o) for o in self.opponents)
                s -= W_DOUBLE_RISK * p_double
            # keep a suit to answer own doubles
            for end in (tile.a, tile.b):
                if view.doubles_held[end] and end != w:
                    s -= W_SUIT
            if w == 0 and view.double_blank:
                if view.doubles_held[0]:
                    s += W_ZERO_END * view.double_blank
                elif view.unseen_doubles[0]:
                    s -= W_ZERO_END * view.double_blank * 0.5

        # blocking an opponent close to going out
        if self.min_opp <= 4:
            consumed = parent.capacity - parent.children == 1 and parent.capacity == 1
            for o in self.opponents:
                d = _danger(obs.hand_sizes[o])
                if not d:
                    continue
                p = view.p_has[o]
                s -= W_BLOCK * d * p[new_end] * (0.5 if view.open_count[new_end] else 1.0)
                if consumed and view.open_count[v] == 1:
                    s += W_BLOCK * d * p[v]
        return s

    def rank(self, moves: Sequence[Move]) -> list[Move]:
        """`moves` best first (stable: equal scores keep the canonical order)."""
        scored = sorted(enumerate(moves), key=lambda im: (-self.score(im[1]), im[0]))
        return [m for _, m in scored]

    def best(self, moves: Sequence[Move]) -> Move:
        best_move = moves[0]
        best_score = self.score(best_move)
        for move in moves[1:]:
            value = self.score(move)
            if value > best_score:
                best_move, best_score = move, value
        return best_move


class SmartBot(Bot):
    """Plays the move with the best hand-tuned heuristic score (deterministic)."""

    def choose(self, turn: Turn) -> Move:
        moves = turn.legal_moves
        if len(moves) == 1:
            return moves[0]
        return SmartPolicy(turn.observation, turn.history).best(moves)


if __name__ == "__main__":
    raise SystemExit(run_main(SmartBot))
