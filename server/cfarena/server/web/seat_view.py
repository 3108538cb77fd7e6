"""A stored match as one seat saw it, from its game log (pure): each decision the seat
was asked (its hand, the moves it was offered, the one it chose, the time it took),
and the seat's game record that an entrant downloads (`seat_record`).

Everything here is made by re-simulating the log with the engine
(`match.resimulation.logged_moves`, as `cfarena replay --seat` does) and reading only
`observe(state, seat)`, the legal moves at the seat's own decisions (the moves the
referee offered: the match law asks with the same list) and
`visible_events(state, seat)`: no other hand, no boneyard order, no tile another seat
drew reaches it. The seed is never part of a seat's view: `seat_record` adds it only
when the caller says the deal is revealed (`disclosure.deal_revealed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cfarena.engine import apply_move, observe, visible_events
from cfarena.match.log_format import event_to_dict, log_seed
from cfarena.match.resimulation import LogError, logged_moves, start_match

# what of a log's top level a seat's record copies (public: who played, the rules, the
# time control, how it ended); never "seed", "deals", "events", "actions", "key"
_PUBLIC_KEYS = ("format", "match_id", "tournament_id", "rules", "players", "seats",
                "time_control", "status", "reason", "started_at", "finished_at", "result")


@dataclass(frozen=True, slots=True)
class SeatTurn:
    """One decision of the seat: the Turn it was sent and its answer."""

    turn_id: int  # the seat's own decision number (the protocol's `Turn.turn_id`)
    round: int  # from 0, as in the log
    hand: tuple[str, ...]  # the seat's hand when asked
    drawn_tile: str | None  # the tile it had just drawn, if it was asked about that one
    offered: tuple[str, ...]  # the legal moves offered, in the Turn's order (`Move.key`)
    chosen: str  # the move applied (the referee's fallback after a fault)
    ms: float | None  # the answer time the referee measured (None: no answer)
    fallback: bool  # the referee played `chosen` for the seat (a fault)
    faults: tuple[str, ...]  # the seat's faults at this decision: "kind: detail"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "hand": list(self.hand), "offered": list(self.offered),
                "faults": list(self.faults)}


@dataclass(frozen=True, slots=True)
class SeatView:
    """What `seat` saw of a whole match (see the module docstring)."""

    seat: int
    hands: tuple[tuple[int, tuple[str, ...]], ...]  # (round, the hand as its play began)
    turns: tuple[SeatTurn, ...]
    events: tuple[dict[str, Any], ...]  # every event as the seat saw it (`event_to_dict`)
    faults: tuple[dict[str, Any], ...]  # the seat's own faults, as logged
    error: str | None = None  # why the log stops replaying (what was seen until then)


def seat_view(log: Mapping[str, Any], seat: int) -> SeatView:
    """`seat`'s view of the match `log` records (ValueError: no such seat; a log whose
    moves stop replaying gives what was seen until then, with `error` set)."""
    players = log.get("players")
    if not isinstance(players, int) or not 0 <= seat < players:
        raise ValueError(f"seat must be 0..{players - 1 if isinstance(players, int) else '?'}"
                         f", got {seat}")
    own_faults = [f for f in log.get("faults") or [] if isinstance(f, dict)
                  and f.get("seat") == seat]
    by_turn: dict[Any, list[str]] = {}
    for f in own_faults:
        by_turn.setdefault(f.get("turn_id"), []).append(f"{f.get('kind')}: {f.get('detail')}")
    # a forfeited seat's bot sees nothing after its forfeit (the referee plays on for
    # it): the view stops at the forfeiting decision (before its fallback's events), or
    # shows nothing of the match when it forfeited at the start
    forfeits = [f.get("turn_id") for f in own_faults if f.get("forfeit")]
    if forfeits and (not isinstance(forfeits[0], int) or forfeits[0] == 0):  # 0: at start
        return SeatView(seat, (), (), (), tuple(own_faults))
    forfeit_turn = forfeits[0] if forfeits else None
    hands: dict[int, tuple[str, ...]] = {}
    turns: list[SeatTurn] = []
    error: str | None = None
    try:
        state = start_match(log)
    except LogError as exc:
        return SeatView(seat, (), (), (), tuple(own_faults), str(exc))
    seen_until: int | None = None  # events the seat saw: all, or up to its forfeit
    try:
        for step in logged_moves(log, state):
            if state.round_index not in hands:
                hands[state.round_index] = tuple(str(t) for t in observe(state, seat).hand)
            turn_id = step.action.get("turn_id")
            if step.action.get("seat") == seat and isinstance(turn_id, int):
                seen = observe(state, seat)
                ms = step.action.get("ms")
                turns.append(SeatTurn(
                    turn_id=turn_id, round=state.round_index,
                    hand=tuple(str(t) for t in seen.hand),
                    drawn_tile=None if seen.drawn_tile is None else str(seen.drawn_tile),
                    offered=tuple(m.key for m in step.offered), chosen=step.move.key,
                    ms=float(ms) if isinstance(ms, int | float) else None,
                    fallback=bool(step.action.get("fallback")),
                    faults=tuple(by_turn.get(turn_id, ()))))
                if turn_id == forfeit_turn:
                    seen_until = len(state.events)
                    break
            apply_move(state, step.move)
    except LogError as exc:
        error = str(exc)
    events = tuple(event_to_dict(e) for e in visible_events(state, seat)[:seen_until])
    return SeatView(seat, tuple(sorted(hands.items())), tuple(turns), events,
                    tuple(own_faults), error)


def seat_record(log: Mapping[str, Any], seats: Sequence[int], bot_match_id: str,
                revealed: bool) -> dict[str, Any]:
    """One line of an entrant's download: the public facts of the match (who played,
    rules, time control, how it ended, the result), the id its bots were given, and
    for each of `seats` (the entrant's) its view: hands as each round's play began,
    every decision, the events as it saw them, its faults. The seed only if `revealed`;
    never another seat's hand, the boneyard or the moves' full record."""
    out: dict[str, Any] = {k: log[k] for k in _PUBLIC_KEYS if k in log}
    out["bot_match_id"] = bot_match_id
    out["revealed"] = revealed
    out["seed"] = str(log_seed(log)) if revealed else None
    views = []
    for seat in seats:
        view = seat_view(log, seat)
        views.append({
            "seat": seat,
            "hands": [{"round": r, "hand": list(hand)} for r, hand in view.hands],
            "turns": [t.to_json() for t in view.turns],
            "events": list(view.events), "faults": list(view.faults),
            "error": view.error})
    out["views"] = views
    return out
