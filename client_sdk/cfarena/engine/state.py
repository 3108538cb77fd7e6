"""The match state machine (RULES.md §2-§5): a mutable `MatchState` changed by moves.

`MatchState` keeps lean internals for speed (tiles as int codes, see
`tile_codes`; per-seat hands with a per-value count; node arrays; open nodes
indexed by their open value). The public functions live in `play.py`
(`new_match`, `legal_moves`, `apply_move`, ...) and `views.py` (`observe`,
`determinize`, ...). Everything here is full information: a seat's view
leaves the engine only through `observe`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.engine.dealing import RoundDeal, RoundSetup, deal_round, explicit_setup
from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import PlacedTile
from cfarena.engine.outcome import MatchEnd, Outcome, RoundOutcome, rank_seats
from cfarena.engine.rules import (
    Draw,
    PlayDrawn,
    ResolvedRules,
    Rules,
    resolve_rules,
)
from cfarena.engine.tile_codes import (
    END_A,
    END_B,
    PIPS,
    TILE_OF,
    code_of,
    play_key,
    play_move,
    tile_of,
)
from cfarena.engine.tiles import Tile

NO_NODE = -1
NO_TILE = -1
DOUBLE_BLANK = 0  # the code of 0-0


class IllegalMoveError(ValueError):
    """A move that is not legal in the current state (`.move` is the move).

    The message names the move, the seat and why it is illegal, using only
    public information and the mover's own hand.
    """

    def __init__(self, move: Move, reason: str) -> None:
        super().__init__(f"illegal move {move.key}: {reason}")
        self.move = move
        self.reason = reason


class MatchState:
    """A whole match, mutated in place by `apply_move` (full information).

    Public attributes: `rules`, `players`, `seed` (None for states built by
    `from_deal` or `determinize`), `deal_seed` (the seed later rounds are
    dealt from), `round_index`, `current_seat` (None between rounds when
    halted, or once the match is over), `is_over`, `outcome`, `events` (every
    event of the match with full information, in order), `round_outcomes`,
    `deals` (one `RoundDeal` per round set up) and `halt_at_round_end` (if
    True, a finished round does not start the next one: `round_over` is True
    and `start_next_round` continues).
    """

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

    def clone(self) -> MatchState:
        """A deep copy sharing only immutable values (fast; for search)."""
        c = MatchState.__new__(MatchState)
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

    def totals(self) -> tuple[int, ...]:
        """Match totals of the finished rounds."""
        return self._totals

    def round_scores(self) -> tuple[tuple[int, ...], ...]:
        """Per-round scores of the finished rounds."""
        return self._round_scores

    def _set_round_outcomes(self, outcomes: list[RoundOutcome]) -> None:
        self.round_outcomes = outcomes
        self._round_scores = tuple(r.scores for r in outcomes)
        totals = [0] * self.players
        for r in outcomes:
            for s, score in enumerate(r.scores):
                totals[s] += score
        self._totals = tuple(totals)

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
    def legal(self) -> tuple[Move, ...]:
        """Legal moves of `current_seat` in canonical order (cached until the next move)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal

    def _compute_legal(self) -> tuple[Move, ...]:
        seat = self.current_seat
        self._legal_keys = []
        if seat is None:
            return ()
        nopen = self._nopen
        drawn = self._drawn
        if drawn != NO_TILE:
            keys = self._plays_of(drawn)
            if keys:
                keys.sort()
                self._legal_keys = keys
                moves = [play_move(k) for k in keys]
                if self.rules.play_drawn is PlayDrawn.MAY:
                    moves.append(PASS)
                return tuple(moves)
            if self.rules.draw is Draw.UNTIL_PLAYABLE and self._can_draw():
                return (DRAW,)
            return (PASS,)
        hand = self._hands[seat]
        keys = []
        pending = self._pending
        if pending != NO_NODE:
            v = nopen[pending]
            if self._vcount[seat][v]:
                keys = [play_key(c, pending) for c in hand if END_A[c] == v or END_B[c] == v]
        else:
            obv = self._obv
            for c in hand:
                a = END_A[c]
                for node in obv[a]:
                    keys.append(c << 8 | node)
                b = END_B[c]
                if b != a:
                    for node in obv[b]:
                        keys.append(c << 8 | node)
        if keys:
            keys.sort()
            self._legal_keys = keys
            return tuple([play_move(k) for k in keys])
        return (DRAW,) if self._can_draw() else (PASS,)

    def _plays_of(self, code: int) -> list[int]:
        pending = self._pending
        a = END_A[code]
        b = END_B[code]
        if pending != NO_NODE:
            v = self._nopen[pending]
            return [play_key(code, pending)] if (a == v or b == v) else []
        keys = [play_key(code, node) for node in self._obv[a]]
        if b != a:
            keys += [play_key(code, node) for node in self._obv[b]]
        return keys

    def _can_draw(self) -> bool:
        return len(self._bone) > self.rules.boneyard_reserve

    def _any_play(self) -> bool:
        """Whether any seat holds a tile that can be played now."""
        if self._pending != NO_NODE:
            values = [self._nopen[self._pending]]
        else:
            values = [v for v, nodes in enumerate(self._obv) if nodes]
        for counts in self._vcount:
            for v in values:
                if counts[v]:
                    return True
        return False

    def why_illegal(self, move: Move) -> str:
        """Why `move` is not among the legal moves (public facts and the mover's hand)."""
        seat = self.current_seat
        if seat is None:
            return "the match is over" if self.is_over else "the round is over"
        legal = self.legal()
        who = f"seat {seat}"
        if move.tile is None:
            if legal and legal[0].tile is not None:
                return f"{who} has a legal play and must play"
            return f"{who} must {legal[0].key}, not {move.kind.value}"
        tile, parent = move.tile, move.parent
        if self._drawn != NO_TILE and code_of(tile) != self._drawn:
            return f"{who} drew a tile this turn and may only play that tile or pass"
        if code_of(tile) not in self._hands[seat]:
            return f"{tile} is not in the hand of {who}"
        if parent is None or not (0 <= parent < len(self._ntile)):
            return f"there is no node #{parent} on the layout"
        if self._nkids[parent] >= self._ncap[parent]:
            return f"node #{parent} has no free end"
        if self._pending != NO_NODE and parent != self._pending:
            return f"the double at #{self._pending} is pending: only plays on it are legal"
        return f"{tile} does not contain the open end {self._nopen[parent]} of #{parent}"

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

    # ------------------------------------------------------------- rounds
    def _settle(self, went_out: int | None) -> None:
        """End the round if someone went out or the table is blocked; go on to the next."""
        while True:
            if went_out is None:
                if len(self._bone) > self.rules.boneyard_reserve or self._any_play():
                    return
                self._end_round(RoundEnd.BLOCKED, None)
            else:
                self._end_round(RoundEnd.WENT_OUT, went_out)
            if self.is_over or self._between_rounds:
                return
            self._setup_round(deal_round(self.rules, self.deal_seed, self.round_index + 1))
            went_out = None

    def _end_round(self, reason: RoundEnd, went_out: int | None) -> None:
        blank = self.rules.double_blank
        scores = tuple(
            sum(blank if c == DOUBLE_BLANK else PIPS[c] for c in hand) for hand in self._hands
        )
        self._set_round_outcomes(
            [*self.round_outcomes, RoundOutcome(self.round_index, reason, scores, went_out)]
        )
        self.events.append(
            Event(EventKind.ROUND_END, self.round_index, went_out, scores=scores, reason=reason)
        )
        self._legal = None
        self._drawn = NO_TILE
        self._has_drawn = False
        self.current_seat = None
        rules = self.rules
        totals = self.totals()
        if rules.end_at_score is not None:
            over = max(totals) > rules.end_at_score
            why = MatchEnd.SCORE_LIMIT
        else:
            over = self.round_index + 1 >= rules.rounds
            why = MatchEnd.ROUNDS_PLAYED
        if over:
            self.is_over = True
            self.outcome = Outcome(
                reason=why,
                totals=totals,
                ranks=rank_seats(self._round_scores, rules.tie_break),
                rounds=tuple(self.round_outcomes),
            )
        elif self.halt_at_round_end:
            self._between_rounds = True

    def start_next_round(self) -> list[Event]:
        """Set up the next round after a halt (`halt_at_round_end`); its events."""
        if not self._between_rounds:
            raise ValueError("start_next_round: the current round is not over")
        start = len(self.events)
        self._between_rounds = False
        self._setup_round(deal_round(self.rules, self.deal_seed, self.round_index + 1))
        self._settle(None)
        return self.events[start:]

    def _setup_round(self, setup: RoundSetup) -> None:
        r = setup.round_index
        rules = self.rules
        n = rules.set_size + 1
        self.round_index = r
        self._legal = None
        self._drawn = NO_TILE
        self._has_drawn = False
        self.deals.append(setup.to_deal())
        self._load_hands([list(h) for h in setup.hands])
        self._bone = setup.boneyard[::-1]
        events = self.events
        double = setup.double
        events.append(
            Event(EventKind.ROUND_START, r, setup.first_seat, tile_of(double))
        )
        for seat, code in setup.draw_off:
            events.append(Event(EventKind.DRAW_OFF, r, seat, tile_of(code)))
        for seat, code in setup.setup_draws:
            self._bone.pop()
            self._add_to_hand(seat, code)
            events.append(Event(EventKind.DRAW, r, seat, tile_of(code)))
        if setup.centre_seat is not None and double in self._hands[setup.centre_seat]:
            self._remove_from_hand(setup.centre_seat, double)
        value = END_A[double]
        self._ntile = [double]
        self._nparent = [NO_NODE]
        self._nopen = [value]
        self._ncap = [rules.spokes]
        self._nkids = [0]
        self._placed = [None]
        self._dirty = [0]
        self._obv = [[] for _ in range(n)]
        self._obv[value].append(0)
        self._pending = 0
        events.append(Event(EventKind.CENTRE, r, setup.centre_seat, tile_of(double), node=0))
        self.current_seat = setup.first_seat

