"""Plain-text rendering of a state or an observation (error messages, tests, replays).

    round 3 of 10, round double 7-7, seat 2 to move
    #0 7-7 [centre, 3/6 spokes]
      #1 7-4 -> #4 4-4* [pending, 1/3 toes]
          #5 4-2 (open 2)
      #2 7-1 -> #3 1-5 (open 5)
      #6 7-0 (open 0)
    hands: seat 0: 0-1 3-5 | seat 1: 8 tiles | ...
    boneyard: 10 tiles (10 drawable)
    scores: 12 0 31 7 (totals)

Tiles are written from the side touching their parent; `*` marks a double;
a line of single tiles is joined by `->` until it reaches a double or an end.
"""

from __future__ import annotations

from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.state import MatchState
from cfarena.engine.views import observe


def _oriented(p: PlacedTile, layout: tuple[PlacedTile, ...]) -> str:
    if p.parent is None or p.is_double:
        return f"{p.tile}{'*' if p.is_double else ''}"
    touching = layout[p.parent].open_value
    return f"{touching}-{p.tile.other(touching)}"


def _double_note(p: PlacedTile, pending: int | None) -> str:
    what = "spokes" if p.parent is None else "toes"
    state = "pending, " if p.node == pending else ""
    return f"[{'centre, ' if p.parent is None else ''}{state}{p.children}/{p.capacity} {what}]"


def render_layout(layout: tuple[PlacedTile, ...], pending: int | None) -> list[str]:
    """The layout as indented lines from the centre."""
    if not layout:
        return ["(empty layout)"]
    children: dict[int, list[int]] = {}
    for p in layout:
        if p.parent is not None:
            children.setdefault(p.parent, []).append(p.node)
    lines: list[str] = []

    def line_from(node: int, indent: int) -> None:
        parts: list[str] = []
        current: int | None = node
        while current is not None:
            p = layout[current]
            parts.append(f"#{p.node} {_oriented(p, layout)}")
            kids = children.get(current, [])
            if p.is_double:
                parts.append(_double_note(p, pending))
                lines.append("  " * indent + " -> ".join(parts[:-1]) + " " + parts[-1])
                for kid in kids:
                    line_from(kid, indent + 2)
                return
            current = kids[0] if kids else None
            if current is None:
                lines.append("  " * indent + " -> ".join(parts) + f" (open {p.open_value})")

    centre = layout[0]
    lines.append(f"#0 {centre.tile} {_double_note(centre, pending)}")
    for kid in children.get(0, []):
        line_from(kid, 1)
    return lines


def render(target: MatchState | Observation, seat: int | None = None) -> str:
    """Plain text of a state (all hands, or only `seat`'s) or of an observation."""
    if isinstance(target, MatchState):
        state = target
        full = seat is None
        obs = observe(state, seat if seat is not None else 0)
    else:
        state = None
        full = False
        obs = target
        seat = obs.seat
    rules = obs.rules
    total_rounds = "until a total passes " + str(rules.end_at_score) if (
        rules.end_at_score is not None) else f"of {rules.rounds}"
    if obs.current_seat is None:
        turn = "match over" if state is None or state.is_over else "round over"
    else:
        turn = f"seat {obs.current_seat} to move"
        if obs.current_has_drawn:
            turn += " (has drawn)"
    out = [
        f"{rules.name}: round {obs.round_index + 1} {total_rounds}, "
        f"round double {obs.round_double}, {turn}",
        *render_layout(obs.layout, obs.pending),
    ]
    hands: list[str] = []
    for s in range(rules.players):
        if full and state is not None:
            tiles = " ".join(str(t) for t in state.hand(s)) or "(empty)"
            hands.append(f"seat {s}: {tiles}")
        elif s == seat:
            tiles = " ".join(str(t) for t in obs.hand) or "(empty)"
            hands.append(f"seat {s}: {tiles}")
        else:
            hands.append(f"seat {s}: {obs.hand_sizes[s]} tiles")
    out.append("hands: " + " | ".join(hands))
    drawn = state.drawn_tile if full and state is not None else obs.drawn_tile
    if drawn is not None:
        out.append(f"drawn tile: {drawn}")
    out.append(f"boneyard: {obs.boneyard_size} tiles ({obs.drawable} drawable)")
    if obs.round_scores:
        out.append("scores: " + " ".join(str(t) for t in obs.totals) + " (totals)")
    else:
        out.append("scores: none yet")
    return "\n".join(out)
