"""What leaves the engine for one seat (RULES.md §6), and sampling states back from it.

`observe` and `visible_events` are the only ways a seat's view is built:
they copy public facts and the seat's own hand, nothing else. `public_view` and
`public_events` are a spectator's (no seat): public facts only, every drawn tile
blanked.
`determinize` goes the other way for Monte Carlo bots: it samples a full
state consistent with an observation.
"""

from __future__ import annotations

import random

from cfarena.engine.dealing import randbelow, shuffle_in_place
from cfarena.engine.events import Event, RoundEnd
from cfarena.engine.observation import Observation, PublicView
from cfarena.engine.outcome import RoundOutcome
from cfarena.engine.rules import check_resolved
from cfarena.engine.state import NO_NODE, NO_TILE, MatchState
from cfarena.engine.tile_codes import TILE_OF, code_of, set_codes


def _check_seat(state: MatchState, seat: int) -> None:
    if not (0 <= seat < state.players):
        raise ValueError(f"seat must be 0..{state.players - 1}, got {seat}")


def observe(state: MatchState, seat: int) -> Observation:
    """Everything `seat` may know now (RULES.md §6), and nothing hidden from it."""
    _check_seat(state, seat)
    rules = state.rules
    own_turn = state.current_seat == seat
    bone = state.boneyard_size
    drawn = state._drawn if own_turn else NO_TILE
    layout = state.layout()
    pending = state._pending
    return Observation(
        seat,
        rules,
        state.round_index,
        layout[0].tile,
        layout,
        pending if pending != NO_NODE else None,
        tuple([TILE_OF[c] for c in sorted(state._hands[seat])]),
        tuple([len(h) for h in state._hands]),
        bone,
        max(0, bone - rules.boneyard_reserve),
        state.current_seat,
        TILE_OF[drawn] if drawn != NO_TILE else None,
        state._round_scores,
        state._totals,
        state.event_offset + len(state.events),
        state.legal() if own_turn else (),
        tuple(state.round_outcomes),
        state._has_drawn,
    )


def visible_events(state: MatchState, seat: int, start: int = 0) -> list[Event]:
    """`state.events[start:]` as `seat` may see them (others' drawn tiles blanked)."""
    _check_seat(state, seat)
    return [e.seen_by(seat) for e in state.events[start:]]


def public_view(state: MatchState) -> PublicView:
    """Everything a spectator may know now: the layout, hand sizes, boneyard count,
    scores; no tile of any hand or of the boneyard, and not who is deciding now."""
    return PublicView(
        state.rules,
        state.round_index,
        state.round_double,
        state.layout(),
        state.pending,
        tuple([len(h) for h in state._hands]),
        state.boneyard_size,
        state._round_scores,
        state._totals,
        state.event_offset + len(state.events),
        state.is_over,
    )


def public_events(state: MatchState, start: int = 0) -> list[Event]:
    """`state.events[start:]` as a spectator may see them: every drawn tile blanked
    (a draw says who drew, not what)."""
    return [e.seen_by(_NO_SEAT) for e in state.events[start:]]


_NO_SEAT = -1  # a viewer that is no seat: `Event.seen_by` hides every seat's draw


def determinize(obs: Observation, rng: random.Random) -> MatchState:
    """A full state consistent with `obs`, the unseen tiles dealt at random.

    The observer's hand is kept; the unseen tiles (set - layout - own hand)
    are shuffled into the other hands (by their sizes) and the boneyard. The
    round, layout, pending double, scores, current seat and drawn-tile phase
    are those of `obs`; `observe(result, obs.seat) == obs`. If the seat to move
    is another seat that has drawn this turn, a random tile of its sampled
    hand is taken as its drawn tile. The result has `seed` None, no events
    (`event_offset` is `obs.event_count`), no deals, and deals later rounds
    from a seed drawn from `rng`. No inference from past events is made
    (e.g. a seat that passed on 4s may be dealt 4s).
    """
    rules = obs.rules
    check_resolved(rules)
    deal_seed = rng.getrandbits(64)
    own = [code_of(t) for t in obs.hand]
    unseen = sorted(set(set_codes(rules.set_size)) - {code_of(p.tile) for p in obs.layout}
                    - set(own))
    others = sum(n for s, n in enumerate(obs.hand_sizes) if s != obs.seat)
    if len(unseen) != others + obs.boneyard_size:
        raise ValueError(
            f"observation inconsistent: {len(unseen)} unseen tiles for {others} in other "
            f"hands and {obs.boneyard_size} in the boneyard"
        )
    shuffle_in_place(unseen, rng)
    pos = 0
    hands: list[list[int]] = []
    for s in range(rules.players):
        if s == obs.seat:
            hands.append(own)  # a fresh list: from_position takes it
        else:
            size = obs.hand_sizes[s]
            hands.append(unseen[pos : pos + size])
            pos += size
    drawn = NO_TILE
    if obs.current_has_drawn and obs.current_seat is not None:
        if obs.current_seat == obs.seat:
            if obs.drawn_tile is None:
                raise ValueError("observation inconsistent: own draw without drawn_tile")
            drawn = code_of(obs.drawn_tile)
        else:
            hand = hands[obs.current_seat]
            drawn = hand[randbelow(rng, len(hand))] if hand else NO_TILE
    return MatchState.from_position(
        rules,
        deal_seed,
        round_index=obs.round_index,
        round_outcomes=obs.round_outcomes
        or [
            RoundOutcome(i, RoundEnd.WENT_OUT if 0 in s else RoundEnd.BLOCKED, s, None)
            for i, s in enumerate(obs.round_scores)
        ],
        event_offset=obs.event_count,
        hands=hands,
        # the rest, last first: in draw order (one copy; unseen[-1] is drawn first)
        boneyard=unseen[: pos - 1 : -1] if pos else unseen[::-1],
        layout=obs.layout,
        pending=obs.pending,
        current_seat=obs.current_seat,
        has_drawn=obs.current_has_drawn,
        drawn=drawn,
    )
