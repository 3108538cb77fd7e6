"""The HTML viewer: one self-contained file (inline CSS, JS, SVG; no network).

`write_html(log, path)` re-simulates the log once for the all-seeing view and
once per seat (`build_views`), and embeds compact JSON; `write_html(log, path,
seat)` embeds only that seat's view (the match as the seat saw it: its own
hand and offered moves, no other hand, no seed to re-deal them from):

- `rounds`: each round's final layout as nodes `[a, b, parent, open, capacity]`
  (public; a frame shows the first `n` of them);
- `frames`: per step `[kind, round, nodes, pending, boneyard, drawable,
  to_move, action, actor, move, fallback, hand_sizes]` (public facts only);
- `events`: a table of distinct events `[kind, round, seat, tile, node,
  parent, scores, reason]`; each view lists, per frame, the indices of the
  events *it* saw (a seat's list comes from `visible_events`, so others'
  drawn tiles are blank there);
- `views`: per view (all-seeing, then seat 0..P-1) the hands it may see as
  timelines `[[frame, "a-b c-d ..."], ...]` (from `observe` for a seat; other
  seats' entries are null), its decision times, the moves offered at its
  decisions (`offered`: `[[frame, ["4-9@3", "draw", ...]], ...]`, a seat's own
  only) and its faults.

The page never derives one view from another: a seat view draws only its
own data, so the DOM of a seat view holds no tile of a hidden hand.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from cfarena.engine import Event
from cfarena.match.log_format import log_seed
from cfarena.match.resimulation import start_match
from cfarena.server.replay.frames import Frame, StepKind, build_views

_KINDS = {StepKind.ROUND_START: 0, StepKind.ACTION: 1, StepKind.ROUND_END: 2}
_EVENT_CODES = {
    "round_start": "s", "draw_off": "o", "centre": "c", "play": "p", "draw": "d",
    "pass": "x", "round_end": "e",
}


def _event_key(event: Event) -> tuple[Any, ...]:
    return (
        _EVENT_CODES[event.kind.value],
        event.round_index,
        event.seat,
        None if event.tile is None else str(event.tile),
        event.node,
        event.parent,
        event.scores,
        None if event.reason is None else event.reason.value,
    )


def _trim(row: list[Any]) -> list[Any]:
    while row and row[-1] is None:
        row.pop()
    return row


def _hands_timelines(frames: Sequence[Frame], players: int) -> list[list[list[Any]] | None]:
    out: list[list[list[Any]] | None] = []
    for s in range(players):
        if all(f.hands[s] is None for f in frames):
            out.append(None)
            continue
        timeline: list[list[Any]] = []
        last: str | None = None
        for f in frames:
            hand = f.hands[s]
            text = "" if hand is None else " ".join(str(t) for t in hand)
            if text != last:
                timeline.append([f.index, text])
                last = text
        out.append(timeline)
    return out


def _fault_text(fault: Mapping[str, Any]) -> str:
    forfeit = ", forfeits the match" if fault.get("forfeit") else ""
    return f"seat {fault.get('seat')}: {fault.get('kind')} ({fault.get('detail')}){forfeit}"


def build_viewer_data(log: Mapping[str, Any], seat: int | None = None) -> dict[str, Any]:
    """The JSON document the viewer page embeds (see the module docstring): every view,
    or with `seat` that seat's alone."""
    views = build_views(log, None if seat is None else [seat])
    # the public facts (layout, boneyard, who moves) are the same in every view: a seat
    # file takes them from the seat's own frames, so nothing comes from the all-seeing
    public = views[seat]
    players = public[0].players
    seats = log.get("seats")
    names = [str(s) for s in seats] if isinstance(seats, list) else []
    names += [f"seat {i}" for i in range(len(names), players)]
    rounds: list[dict[str, Any]] = []
    for f in public:
        if f.kind is StepKind.ROUND_START:
            rounds.append({"start": f.index, "nodes": []})
        nodes = rounds[-1]["nodes"]
        for p in f.layout[len(nodes):]:
            nodes.append([p.tile.a, p.tile.b, -1 if p.parent is None else p.parent,
                          p.open_value, p.capacity])
        if f.round_end is not None:
            rounds[-1]["end"] = f.index
            rounds[-1]["scores"] = list(f.round_end.scores)
            rounds[-1]["reason"] = f.round_end.reason.value
            rounds[-1]["out"] = f.round_end.went_out
    frames = [
        [_KINDS[f.kind], f.round_index, len(f.layout), -1 if f.pending is None else f.pending,
         f.boneyard, f.drawable, -1 if f.current_seat is None else f.current_seat,
         -1 if f.action_index is None else f.action_index, -1 if f.actor is None else f.actor,
         f.move or "", 1 if f.fallback else 0, list(f.hand_sizes)]
        for f in public
    ]
    table: dict[tuple[Any, ...], int] = {}
    out_views: list[dict[str, Any]] = []
    for viewer, frames_of in views.items():
        ev: list[list[int]] = []
        for f in frames_of:
            ids = []
            for e in f.events:
                key = _event_key(e)
                ids.append(table.setdefault(key, len(table)))
            ev.append(ids)
        out_views.append({
            "label": "All-seeing" if viewer is None else f"Seat {viewer}: {names[viewer]}",
            "seat": viewer,
            "hands": _hands_timelines(frames_of, players),
            "ev": ev,
            "ms": [[f.index, round(f.ms, 2)] for f in frames_of if f.ms is not None],
            "offered": [[f.index, list(f.offered)] for f in frames_of if f.offered],
            "faults": [[f.index, _fault_text(x)] for f in frames_of for x in f.faults],
        })
    rules = log.get("rules", {})
    result = log.get("result", {})
    return {
        "match_id": log.get("match_id"),
        "players": players,
        "names": names,
        "rules": rules,
        "resolved": start_match(log).rules.to_dict(),
        # a string: a JSON number above 2**53 would be rounded by the page's JavaScript;
        # none in a seat's file (the seed deals every hand)
        "seed": str(log_seed(log)) if seat is None else None,
        "status": log.get("status"),
        "reason": log.get("reason"),
        "result": result if isinstance(result, dict) else {},
        "actions": len(log.get("actions", [])),
        "rounds": rounds,
        "frames": frames,
        "events": [_trim([list(x) if isinstance(x, tuple) else x for x in k]) for k in table],
        "views": out_views,
    }


def _asset(name: str) -> str:
    return resources.files("cfarena.server.replay").joinpath(name).read_text(encoding="utf-8")


def render_html(log: Mapping[str, Any], seat: int | None = None) -> str:
    """The viewer page of a log as one HTML string: every view, or `seat`'s alone."""
    data = build_viewer_data(log, seat)
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    title = html.escape(f"cfarena replay · {data['match_id']}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{title}</title>\n<style>\n{_asset('viewer.css')}</style>\n</head>\n<body>\n"
        f"{_asset('viewer_body.html')}"
        f"<script id=\"replay-data\" type=\"application/json\">{payload}</script>\n"
        f"<script>\n{_asset('viewer.js')}</script>\n</body>\n</html>\n"
    )


def write_html(log: Mapping[str, Any], path: str | Path, seat: int | None = None) -> Path:
    """Write the self-contained viewer page of `log` (every view, or `seat`'s alone) to
    `path`; returns the path."""
    target = Path(path)
    target.write_text(render_html(log, seat), encoding="utf-8")
    return target
