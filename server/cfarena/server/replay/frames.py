"""Frames: a game log re-simulated step by step, as everyone or as one seat saw it.

A *step* is a round start (its setup events), an applied action, or a round
end. `build_frames(log, seat)` returns one `Frame` per step; `build_views`
builds the all-seeing view and every seat's view in one pass. A seat's frame
is made only from `observe(state, seat)` and `visible_events(state, seat)`,
so nothing hidden from that seat (other hands, the boneyard, others' drawn
tiles) can reach it; other seats' hands are `None` there. The moves a seat
was offered at a decision are recomputed by the re-simulation (the log keeps
only the move applied): a seat sees them for its own decisions only.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cfarena.engine import (
    Event,
    EventKind,
    PlacedTile,
    RoundOutcome,
    Tile,
    apply_move,
    observe,
    visible_events,
)
from cfarena.engine.state import MatchState
from cfarena.match.resimulation import logged_moves, start_match


class StepKind(enum.Enum):
    ROUND_START = "round_start"
    ACTION = "action"
    ROUND_END = "round_end"


@dataclass(frozen=True, slots=True)
class Frame:
    """What one viewer (`viewer`, None = all-seeing) may see after one step."""

    index: int  # position in the frame list
    kind: StepKind
    round_index: int
    viewer: int | None
    action_index: int | None  # index into log["actions"] for ACTION steps
    actor: int | None  # the seat that acted (ACTION steps)
    move: str | None  # the action's Move.key (public: draws show no tile)
    decided: bool  # a bot decision (it has a turn id)
    fallback: bool  # played by the referee for a faulted or forfeited seat
    ms: float | None  # decision time; in a seat view only for the seat's own decisions
    offered: tuple[str, ...]  # the legal moves (keys, in the order offered) of a decision;
    # in a seat view only for the seat's own decisions, else empty
    layout: tuple[PlacedTile, ...]
    pending: int | None
    hands: tuple[tuple[Tile, ...] | None, ...]  # per seat; None where hidden
    hand_sizes: tuple[int, ...]
    boneyard: int
    drawable: int
    current_seat: int | None
    drawn_tile: Tile | None  # the tile the seat to move drew (if the viewer may see it)
    events: tuple[Event, ...]  # this step's events as the viewer sees them
    faults: tuple[Mapping[str, Any], ...]  # faults at this step (a seat sees its own)
    round_scores: tuple[tuple[int, ...], ...]  # finished rounds so far
    totals: tuple[int, ...]
    round_end: RoundOutcome | None  # set on ROUND_END steps

    @property
    def players(self) -> int:
        return len(self.hand_sizes)


@dataclass(frozen=True, slots=True)
class _Step:
    kind: StepKind
    start: int  # the step's events are state.events[start:stop]
    stop: int
    action_index: int | None
    offered: tuple[str, ...] = ()  # the legal moves at the action (keys, in order)


def _steps(log: Mapping[str, Any], state: MatchState) -> Iterator[_Step]:
    """Drive `state` through the log, yielding after every step (state is then current)."""
    state.halt_at_round_end = True
    yield from _split(state, 0, None)
    split = len(state.events)  # the events yielded so far
    for step in logged_moves(log, state):  # it starts each round after the first
        if len(state.events) > split:
            yield from _split(state, split, None)
        start = len(state.events)
        apply_move(state, step.move)
        yield from _split(state, start, step.index, tuple(m.key for m in step.offered))
        split = len(state.events)


def _split(state: MatchState, start: int, action: int | None, offered: tuple[str, ...] = ()
           ) -> Iterator[_Step]:
    events = state.events
    end = next((j for j in range(start, len(events))
                if events[j].kind is EventKind.ROUND_END), None)
    kind = StepKind.ACTION if action is not None else StepKind.ROUND_START
    yield _Step(kind, start, end if end is not None else len(events), action, offered)
    if end is not None:
        yield _Step(StepKind.ROUND_END, end, end + 1, None)


def _fault_map(log: Mapping[str, Any]) -> dict[tuple[Any, int], list[Mapping[str, Any]]]:
    """Faults by (seat, turn id); turn id 0 = at the match start.

    A decision is named by its seat and turn id in every log format (format 1
    numbers turn ids over the match, format 2 per seat).
    """
    out: dict[tuple[Any, int], list[Mapping[str, Any]]] = {}
    for f in log.get("faults", []) or []:
        if isinstance(f, dict) and isinstance(f.get("turn_id"), int):
            out.setdefault((f.get("seat"), f["turn_id"]), []).append(f)
    return out


def build_views(
    log: Mapping[str, Any], viewers: Sequence[int | None] | None = None
) -> dict[int | None, list[Frame]]:
    """Frames for each viewer (default: all-seeing and every seat), in one re-simulation.

    Raises `LogError` (naming the JSON path; `match.resimulation.logged_moves`) if the
    log's moves cannot be replayed.
    """
    state = start_match(log)
    players = state.players
    wanted: list[int | None] = [None, *range(players)] if viewers is None else list(viewers)
    for v in wanted:
        if v is not None and not (0 <= v < players):
            raise ValueError(f"seat must be 0..{players - 1}, got {v}")
    frames: dict[int | None, list[Frame]] = {v: [] for v in wanted}
    faults = _fault_map(log)
    actions = log.get("actions", [])
    for index, step in enumerate(_steps(log, state)):
        action: Mapping[str, Any] = {}
        if step.action_index is not None:
            action = actions[step.action_index]
        decided = "turn_id" in action
        step_faults: list[Mapping[str, Any]] = []
        if index == 0:
            step_faults += [f for (_, turn), fs in faults.items() if turn == 0 for f in fs]
        if decided and isinstance(action.get("turn_id"), int) and action["turn_id"] != 0:
            step_faults += faults.get((action.get("seat"), action["turn_id"]), [])
        ms_raw = action.get("ms") if decided else None
        ms = float(ms_raw) if isinstance(ms_raw, int | float) else None
        actor = action.get("seat") if action else None
        round_end = state.round_outcomes[-1] if step.kind is StepKind.ROUND_END else None
        for viewer in wanted:
            frames[viewer].append(
                _frame(state, step, index, viewer, actor, action, decided, ms,
                       step_faults, round_end)
            )
    return frames


def _frame(
    state: MatchState,
    step: _Step,
    index: int,
    viewer: int | None,
    actor: int | None,
    action: Mapping[str, Any],
    decided: bool,
    ms: float | None,
    faults: Sequence[Mapping[str, Any]],
    round_end: RoundOutcome | None,
) -> Frame:
    common = {
        "index": index,
        "kind": step.kind,
        "viewer": viewer,
        "action_index": step.action_index,
        "actor": actor,
        "move": action.get("move") if action else None,
        "decided": decided,
        "fallback": bool(action.get("fallback")),
        "round_end": round_end,
    }
    offered = step.offered if decided else ()
    if viewer is None:
        return Frame(
            round_index=state.round_index,
            ms=ms,
            offered=offered,
            layout=state.layout(),
            pending=state.pending,
            hands=tuple(state.hand(s) for s in range(state.players)),
            hand_sizes=tuple(state.hand_size(s) for s in range(state.players)),
            boneyard=state.boneyard_size,
            drawable=max(0, state.boneyard_size - state.rules.boneyard_reserve),
            current_seat=state.current_seat,
            drawn_tile=state.drawn_tile,
            events=tuple(state.events[step.start : step.stop]),
            faults=tuple(faults),
            round_scores=state.round_scores(),
            totals=state.totals(),
            **common,  # type: ignore[arg-type]
        )
    obs = observe(state, viewer)
    seen = visible_events(state, viewer, step.start)[: step.stop - step.start]
    return Frame(
        round_index=obs.round_index,
        ms=ms if actor == viewer else None,
        offered=offered if actor == viewer else (),
        layout=obs.layout,
        pending=obs.pending,
        hands=tuple(obs.hand if s == viewer else None for s in range(obs.players)),
        hand_sizes=obs.hand_sizes,
        boneyard=obs.boneyard_size,
        drawable=obs.drawable,
        current_seat=obs.current_seat,
        drawn_tile=obs.drawn_tile,
        events=tuple(seen),
        faults=tuple(f for f in faults if f.get("seat") == viewer),
        round_scores=obs.round_scores,
        totals=obs.totals,
        **common,  # type: ignore[arg-type]
    )


def build_frames(log: Mapping[str, Any], seat: int | None = None) -> list[Frame]:
    """One frame per step, all-seeing (`seat` None) or as `seat` saw the match."""
    return build_views(log, [seat])[seat]


def event_text(event: Event, viewer: int | None = None) -> str:
    """One line for an event (`viewer`'s own seat is marked "you")."""
    return event.describe(viewer)
