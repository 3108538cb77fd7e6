"""The live view's messages, built by pure functions from the engine's public view
(`cfarena.engine.public_view`, `public_events`): the layout, hand sizes, boneyard
count, scores and public events of a running match; never a hand, the boneyard
order or the seed (those are not in a `PublicView`, and a draw event's tile is
blanked before it gets here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cfarena.engine import Event, PublicView

RECENT_EVENTS = 60  # a viewer that joins gets this many of the latest events


def event_json(event: Event, index: int) -> dict[str, Any]:
    """One public event (a draw has no tile)."""
    return {
        "i": index,
        "kind": event.kind.value,
        "round": event.round_index,
        "seat": event.seat,
        "tile": None if event.tile is None else str(event.tile),
        "node": event.node,
        "parent": event.parent,
        "scores": None if event.scores is None else list(event.scores),
        "reason": None if event.reason is None else event.reason.value,
        "text": event.describe(),
    }


def snapshot_json(view: PublicView) -> dict[str, Any]:
    """The table as anyone may see it now."""
    return {
        "round": view.round_index,
        "round_double": str(view.round_double),
        "layout": [{"node": p.node, "tile": str(p.tile), "parent": p.parent,
                    "open": p.open_value, "free": p.free} for p in view.layout],
        "pending": view.pending,
        "hand_sizes": list(view.hand_sizes),
        "boneyard": view.boneyard_size,
        "current_seat": view.current_seat,
        "has_drawn": view.current_has_drawn,
        "round_scores": [list(r) for r in view.round_scores],
        "totals": list(view.totals),
        "event_count": view.event_count,
        "over": view.over,
    }


def live_message(view: PublicView, events: Sequence[Event], first_index: int
                 ) -> dict[str, Any]:
    """A snapshot with the public events numbered from `first_index`."""
    out = snapshot_json(view)
    out["events"] = [event_json(e, first_index + i) for i, e in enumerate(events)]
    return out
