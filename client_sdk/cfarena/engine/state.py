"""The match state machine (RULES.md §2-§5): a mutable `MatchState` changed by moves.

`MatchState` is put together from layers, one module each (see
`state_fields.py`): its fields (`state_fields.StateFields`), legal-move
generation (`legality.Legality`), a round's setup, end and scoring
(`rounds.RoundFlow`), and this module: the constructors (`new`, `from_deal`,
`from_position`; `clone` is with the fields), the full-information accessors
and applying a move (placing a tile on the layout, drawing, passing).

The public functions live in `play.py` (`new_match`, `legal_moves`,
`apply_move`, ...) and `views.py` (`observe`, `determinize`, ...).
Everything here is full information: a seat's view leaves the engine only
through `observe`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.engine.dealing import deal_round, explicit_setup
from cfarena.engine.events import Event, EventKind
from cfarena.engine.legality import Legality
from cfarena.engine.moves import Move, MoveKind
from cfarena.engine.observation import PlacedTile
from cfarena.engine.outcome import RoundOutcome
from cfarena.engine.rounds import RoundFlow
from cfarena.engine.rules import ResolvedRules, Rules, resolve_rules
from cfarena.engine.state_fields import NO_NODE, NO_TILE
from cfarena.engine.tile_codes import END_A, END_B, TILE_OF, code_of, tile_of
from cfarena.engine.tiles import Tile

__all__ = ["NO_NODE", "NO_TILE", "IllegalMoveError", "MatchState"]


class IllegalMoveError(ValueError):
    """A move that is not legal in the current state (`.move` is the move).

    The message names the move, the seat and why it is illegal, using only
    public information and the mover's own hand.
    """

    def __init__(self, move: Move, reason: str) -> None:
        super().__init__(f"illegal move {move.key}: {reason}")
        self.move = move
        self.reason = reason


class MatchState(Legality, RoundFlow):
    """A whole match, mutated in place by `apply_move` (full information).

    Public attributes: `rules`, `players`, `seed` (None for states built by
    `from_deal` or `determinize`), `deal_seed` (the seed later rounds are
    dealt from), `round_index`, `current_seat` (None between rounds when
    halted, or once the match is over), `is_over`, `outcome`, `events` (every
    event of the match with full information, in order), `round_outcomes`,
    `deals` (one `RoundDeal` per round set up) and `halt_at_round_end` (if
    True, a finished round does not start the next one: `round_over` is True
    and `start_next_round` continues).

    Some public methods come from its layers: `clone` (`StateFields`),
    `legal` and `why_illegal` (`Legality`), `totals`, `round_scores` and
    `start_next_round` (`RoundFlow`).
    """

    __slots__ = ()  # the fields are declared in `StateFields`

    # ------------------------------------------------------------ construction
    @classmethod
    def from_deal(
        cls,
        rules: Rules | ResolvedRules,
        players: int,
        hands: Sequence[Sequence[Tile]],
        boneyard: Sequence[Tile],
        first_seat: int,
        round_index: int = 0,
        seed: int = 0,
    ) -> MatchState:
        """A round set up from an explicit deal (tests, puzzles, imports).

        The round double of `round_index` is already in the centre (it must not
        be in `hands` or `boneyard`); `first_seat` moves; `boneyard[0]` is drawn
        first. Later rounds are dealt from `seed` (the state's `seed` is None,
        `deal_seed` is `seed`). ValueError if the tiles are not exactly the set
        minus the round double.
        """
        resolved = resolve_rules(rules, players)
        setup = explicit_setup(resolved, hands, boneyard, first_seat, round_index)
        state = cls(resolved, None, seed)
        state._setup_round(setup)
        state._settle(None)
        return state

    @classmethod
    def new(cls, rules: ResolvedRules, seed: int) -> MatchState:
        """A new match, its first round dealt from `seed` and set up (`play.new_match`)."""
        state = cls(rules, seed, seed)
        state._setup_round(deal_round(rules, seed, 0))
        state._settle(None)
        return state

    @classmethod
    def from_position(
        cls,
        rules: ResolvedRules,
        deal_seed: int,
        *,
        round_index: int,
        round_outcomes: Sequence[RoundOutcome],
        event_offset: int,
        hands: list[list[int]],
        boneyard: Sequence[int],
        layout: Sequence[PlacedTile],
        pending: int | None,
        current_seat: int | None,
        has_drawn: bool,
        drawn: int = NO_TILE,
    ) -> MatchState:
        """A state in the middle of a round, from every fact of it (determinization).

        OpenSpiel's `resample_from_infostate` is the model: `views.determinize`
        samples the hidden facts and this builds the state, so only this class
        knows its internals. `hands`, `boneyard` (in draw order, `boneyard[0]`
        drawn first) and `drawn` (the tile the seat to move drew this turn,
        NO_TILE if none) are tile codes (`tile_codes.code_of`); the state takes
        the lists of `hands` as they are (pass fresh ones: this is a hot path of
        search bots). The state has `seed` None, no events (`event_offset`
        counts the events before), no deals, and deals later rounds from
        `deal_seed`. The facts are trusted to be consistent (the caller checks
        the tile count).
        """
        state = cls(rules, None, deal_seed)
        state.round_index = round_index
        state.event_offset = event_offset
        state._set_round_outcomes(list(round_outcomes))
        state._load_hands(hands)
        state._bone = list(reversed(boneyard))
        state._ntile = [code_of(p.tile) for p in layout]
        state._nparent = [p.parent if p.parent is not None else NO_NODE for p in layout]
        state._nopen = [p.open_value for p in layout]
        state._ncap = [p.capacity for p in layout]
        state._nkids = [p.children for p in layout]
        state._placed = list(layout)
        obv: list[list[int]] = [[] for _ in range(rules.set_size + 1)]
        for p in layout:
            if p.children < p.capacity:
                obv[p.open_value].append(p.node)
        state._obv = obv
        state._pending = pending if pending is not None else NO_NODE
        state.current_seat = current_seat
        state.is_over = current_seat is None
        if has_drawn and current_seat is not None:
            state._has_drawn = True
            state._drawn = drawn
        return state

    # ------------------------------------------------------- full-information
    def hand(self, seat: int) -> tuple[Tile, ...]:
        """Seat's hand, sorted. Full information: for the referee and tests only."""
        return tuple(tile_of(c) for c in sorted(self._hands[seat]))

    def hand_size(self, seat: int) -> int:
        return len(self._hands[seat])

    def boneyard(self) -> tuple[Tile, ...]:
        """The boneyard in draw order. Full information: referee and tests only."""
        return tuple(tile_of(c) for c in reversed(self._bone))

    @property
    def boneyard_size(self) -> int:
        return len(self._bone)

    @property
    def drawn_tile(self) -> Tile | None:
        """The tile the current seat drew this turn (full information)."""
        return tile_of(self._drawn) if self._drawn != NO_TILE else None

    @property
    def has_drawn(self) -> bool:
        """Whether the current seat has drawn this turn (public)."""
        return self._has_drawn

    @property
    def pending(self) -> int | None:
        """Node id of the pending double, if any."""
        return self._pending if self._pending != NO_NODE else None

    @property
    def round_double(self) -> Tile:
        return tile_of(self._ntile[0])

    @property
    def round_over(self) -> bool:
        """True once the current round has ended (halted between rounds, or match over)."""
        return self._between_rounds or self.is_over

    @property
    def event_count(self) -> int:
        return self.event_offset + len(self.events)

    def layout(self) -> tuple[PlacedTile, ...]:
        """The layout of the current round, indexed by node id."""
        placed = self._placed
        if self._dirty:
            for node in self._dirty:
                parent = self._nparent[node]
                placed[node] = PlacedTile(
                    node,
                    TILE_OF[self._ntile[node]],
                    parent if parent != NO_NODE else None,
                    self._nopen[node],
                    self._ncap[node],
                    self._nkids[node],
                )
            self._dirty = []
        return tuple(placed)  # type: ignore[arg-type]

    def tiles_in_play(self) -> list[Tile]:
        """Every tile of the round: hands, boneyard and layout (for invariant checks)."""
        codes = [c for h in self._hands for c in h] + self._bone + self._ntile
        return [tile_of(c) for c in codes]

    def __repr__(self) -> str:
        return (
            f"MatchState({self.rules.name}, players={self.players}, round={self.round_index}, "
            f"current_seat={self.current_seat}, over={self.is_over})"
        )

    # ---------------------------------------------------------------- moves
    def apply(self, move: Move) -> list[Event]:
        """Validate and apply `move` for `current_seat`; the events it produced."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        tile = move.tile
        kind = move.kind
        if kind is MoveKind.PLAY:
            parent = move.parent
            ok = (
                tile is not None
                and parent is not None
                and 0 <= parent < 256
                and (code_of(tile) << 8 | parent) in self._legal_keys
            )
        else:
            ok = bool(legal) and legal[-1].kind is kind
        if not ok:
            raise IllegalMoveError(move, self.why_illegal(move))
        seat = self.current_seat
        assert seat is not None
        start = len(self.events)
        self._legal = None
        if tile is not None:
            assert move.parent is not None
            self._play(seat, code_of(tile), move.parent)
        elif kind is MoveKind.DRAW:
            self._draw(seat)
        else:
            self.events.append(Event(EventKind.PASS, self.round_index, seat))
            self._next_turn(seat)
            self._settle(None)
        return self.events[start:]

    def _play(self, seat: int, code: int, parent: int) -> None:
        self._remove_from_hand(seat, code)
        value = self._nopen[parent]
        a = END_A[code]
        b = END_B[code]
        node = len(self._ntile)
        kids = self._nkids[parent] + 1
        self._nkids[parent] = kids
        self._dirty.append(parent)
        if kids >= self._ncap[parent]:
            self._obv[value].remove(parent)
            if parent == self._pending:
                self._pending = NO_NODE
        self._ntile.append(code)
        self._nparent.append(parent)
        self._nkids.append(0)
        self._placed.append(None)
        self._dirty.append(node)
        if a == b:
            self._nopen.append(a)
            self._ncap.append(self.rules.toes)
            self._pending = node
            self._obv[a].append(node)
        else:
            other = b if a == value else a
            self._nopen.append(other)
            self._ncap.append(1)
            self._obv[other].append(node)
        self.events.append(
            Event(EventKind.PLAY, self.round_index, seat, TILE_OF[code], node, parent)
        )
        if not self._hands[seat]:
            self._settle(seat)
        else:
            self._next_turn(seat)
            self._settle(None)

    def _draw(self, seat: int) -> None:
        code = self._bone.pop()
        self._add_to_hand(seat, code)
        self._drawn = code
        self._has_drawn = True
        self.events.append(Event(EventKind.DRAW, self.round_index, seat, TILE_OF[code]))
        self._settle(None)

    def _next_turn(self, seat: int) -> None:
        self.current_seat = (seat + 1) % self.players
        self._drawn = NO_TILE
        self._has_drawn = False
