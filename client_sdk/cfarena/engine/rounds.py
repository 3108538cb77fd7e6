"""A round's life (RULES.md §4-§5): `RoundFlow`, a layer of `MatchState`.

Setting a round up from its deal (the round double in the centre, the
setup draws), ending it when a seat goes out or the table is blocked,
scoring it (pips left in hand, the double-blank's value), ending the match
(score limit or rounds played) and going on to the next round, or halting
between rounds (`halt_at_round_end`). A mixin over `StateFields` (see
`state_fields.py` for how `MatchState` is put together); the deal itself
is `dealing.py`, the ranking `outcome.rank_seats`.
"""

from __future__ import annotations

from cfarena.engine.dealing import RoundSetup, deal_round
from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.outcome import MatchEnd, Outcome, RoundOutcome, rank_seats
from cfarena.engine.state_fields import NO_NODE, NO_TILE, StateFields
from cfarena.engine.tile_codes import END_A, PIPS, tile_of

DOUBLE_BLANK = 0  # the code of 0-0


class RoundFlow(StateFields):
    """Round setup, round end and scoring, match end."""

    __slots__ = ()

    def totals(self) -> tuple[int, ...]:
        """Match totals of the finished rounds."""
        return self._totals

    def round_scores(self) -> tuple[tuple[int, ...], ...]:
        """Per-round scores of the finished rounds."""
        return self._round_scores

    def start_next_round(self) -> list[Event]:
        """Set up the next round after a halt (`halt_at_round_end`); its events."""
        if not self._between_rounds:
            raise ValueError("start_next_round: the current round is not over")
        start = len(self.events)
        self._between_rounds = False
        self._setup_round(deal_round(self.rules, self.deal_seed, self.round_index + 1))
        self._settle(None)
        return self.events[start:]

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
