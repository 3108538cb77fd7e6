"""The fields of a match state, in one place: `StateFields`, the base of `MatchState`.

A `MatchState` is one class written in four modules, each a layer of the
class (a mixin) over the one before:

- `state_fields.py` (this module): every field (`__slots__`), its initial
  value (`__init__`), its copy (`clone`), and the bookkeeping that keeps
  paired fields in step (a hand and its per-value counts; the round outcomes
  and their scores and totals). A new field is added here and nowhere else.
- `legality.py` (`Legality`): which moves are legal now, and why a move is not
  (RULES.md §2-§3).
- `rounds.py` (`RoundFlow`): setting up a round (§4), ending it when a seat
  goes out or the table is blocked, scoring it, and going on (§5).
- `state.py` (`MatchState`): the constructors, the full-information accessors
  and applying a move (§2-§3).

Only these modules touch a state's private fields (a test checks it); every
other module, `views.py` included, goes through `MatchState`'s constructors
and public members. The classes are mixins rather than functions over a state
so the hot path keeps plain method calls on `self` with no extra indirection,
and so each layer is type-checked against the fields declared here.

Internals are lean for speed: tiles are int codes (`tile_codes`), each seat's
hand comes with a count per pip value (`_vcount`), the layout is parallel node
arrays (`_ntile`, `_nparent`, `_nopen`, `_ncap`, `_nkids`) and open nodes are
indexed by their open value (`_obv`).
"""

from __future__ import annotations

from typing import Self

from cfarena.engine.dealing import RoundDeal
from cfarena.engine.events import Event
from cfarena.engine.moves import Move
from cfarena.engine.observation import PlacedTile
from cfarena.engine.outcome import Outcome, RoundOutcome
from cfarena.engine.rules import ResolvedRules
from cfarena.engine.tile_codes import END_A, END_B

NO_NODE = -1
NO_TILE = -1


class StateFields:
    """A match state's fields, their initial values and their copy (see the module doc)."""

    __slots__ = (
        "_between_rounds",
        "_bone",
        "_dirty",
        "_drawn",
        "_hands",
        "_has_drawn",
        "_legal",
        "_legal_keys",
        "_ncap",
        "_nkids",
        "_nopen",
        "_nparent",
        "_ntile",
        "_obv",
        "_pending",
        "_placed",
        "_round_scores",
        "_totals",
        "_vcount",
        "current_seat",
        "deal_seed",
        "deals",
        "event_offset",
        "events",
        "halt_at_round_end",
        "is_over",
        "outcome",
        "players",
        "round_index",
        "round_outcomes",
        "rules",
        "seed",
    )

    def __init__(self, rules: ResolvedRules, seed: int | None, deal_seed: int) -> None:
        self.rules = rules
        self.players = rules.players
        self.seed = seed
        self.deal_seed = deal_seed
        self.round_index = 0
        self.current_seat: int | None = None
        self.is_over = False
        self.outcome: Outcome | None = None
        self.events: list[Event] = []
        # events before `events[0]` (non-zero only for determinized states)
        self.event_offset = 0
        self.round_outcomes: list[RoundOutcome] = []
        self.deals: list[RoundDeal] = []
        self.halt_at_round_end = False
        self._between_rounds = False
        n = rules.set_size + 1
        self._hands: list[list[int]] = [[] for _ in range(self.players)]
        self._vcount: list[list[int]] = [[0] * n for _ in range(self.players)]
        self._bone: list[int] = []  # draw order reversed: the next tile is `_bone[-1]`
        self._ntile: list[int] = []
        self._nparent: list[int] = []
        self._nopen: list[int] = []
        self._ncap: list[int] = []
        self._nkids: list[int] = []
        self._obv: list[list[int]] = [[] for _ in range(n)]  # open nodes by open value
        self._pending = NO_NODE
        self._drawn = NO_TILE
        self._has_drawn = False
        self._legal: tuple[Move, ...] | None = None
        # play keys of `_legal`, for validating a move without Move.__eq__
        self._legal_keys: list[int] = []
        self._placed: list[PlacedTile | None] = []
        self._dirty: list[int] = []  # nodes whose cached PlacedTile is stale
        self._round_scores: tuple[tuple[int, ...], ...] = ()
        self._totals: tuple[int, ...] = (0,) * self.players

    def clone(self) -> Self:
        """A deep copy sharing only immutable values (fast; for search)."""
        cls = type(self)
        c = cls.__new__(cls)
        c.rules = self.rules
        c.players = self.players
        c.seed = self.seed
        c.deal_seed = self.deal_seed
        c.round_index = self.round_index
        c.current_seat = self.current_seat
        c.is_over = self.is_over
        c.outcome = self.outcome
        c.events = self.events.copy()
        c.event_offset = self.event_offset
        c.round_outcomes = self.round_outcomes.copy()
        c.deals = self.deals.copy()
        c.halt_at_round_end = self.halt_at_round_end
        c._between_rounds = self._between_rounds
        c._hands = [h.copy() for h in self._hands]
        c._vcount = [v.copy() for v in self._vcount]
        c._bone = self._bone.copy()
        c._ntile = self._ntile.copy()
        c._nparent = self._nparent.copy()
        c._nopen = self._nopen.copy()
        c._ncap = self._ncap.copy()
        c._nkids = self._nkids.copy()
        c._obv = [o.copy() for o in self._obv]
        c._pending = self._pending
        c._drawn = self._drawn
        c._has_drawn = self._has_drawn
        c._legal = self._legal
        c._legal_keys = self._legal_keys
        c._placed = self._placed.copy()
        c._dirty = self._dirty.copy()
        c._round_scores = self._round_scores
        c._totals = self._totals
        return c

    # ------------------------------------------------ fields kept in step
    def _load_hands(self, hands: list[list[int]]) -> None:
        """Take `hands` (tile codes, one list per seat) and count their values."""
        n = self.rules.set_size + 1
        vcount = [[0] * n for _ in range(self.players)]
        for counts, hand in zip(vcount, hands, strict=True):
            for c in hand:
                counts[END_A[c]] += 1
                if END_B[c] != END_A[c]:
                    counts[END_B[c]] += 1
        self._hands = hands
        self._vcount = vcount

    def _remove_from_hand(self, seat: int, code: int) -> None:
        self._hands[seat].remove(code)
        counts = self._vcount[seat]
        a = END_A[code]
        b = END_B[code]
        counts[a] -= 1
        if b != a:
            counts[b] -= 1

    def _add_to_hand(self, seat: int, code: int) -> None:
        self._hands[seat].append(code)
        counts = self._vcount[seat]
        a = END_A[code]
        b = END_B[code]
        counts[a] += 1
        if b != a:
            counts[b] += 1

    def _set_round_outcomes(self, outcomes: list[RoundOutcome]) -> None:
        """Set the finished rounds' outcomes with their per-round scores and totals."""
        self.round_outcomes = outcomes
        self._round_scores = tuple(r.scores for r in outcomes)
        totals = [0] * self.players
        for r in outcomes:
            for s, score in enumerate(r.scores):
                totals[s] += score
        self._totals = tuple(totals)
