"""Terminal replay (rich): every step printed, or stepped through with single keys.

    replay_terminal(log, seat=None, show_all=True, console=Console())

Keys when stepping: n / space / right arrow = next step, p / left arrow =
previous, r = next round, R = previous round, q = quit. On a stdin that is not
a TTY (and without injected `keys`) every step is printed instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.text import Text

from cfarena.engine.render import render_layout
from cfarena.server.replay.frames import Frame, StepKind, build_frames, event_text

KEY_HELP = "n/space next · p previous · r next round · R previous round · q quit"


def _names(log: Mapping[str, Any]) -> list[str]:
    seats = log.get("seats")
    players = int(log.get("players", 0))
    names = [str(s) for s in seats] if isinstance(seats, list) else []
    return names + [""] * (players - len(names))


def header_text(log: Mapping[str, Any], seat: int | None) -> Text:
    """The replay's title lines: match, rules, seats and the view."""
    rules = log.get("rules", {})
    preset = rules.get("preset", "?") if isinstance(rules, dict) else "?"
    overrides = ", ".join(f"{k}={v}" for k, v in rules.items() if k != "preset") if isinstance(
        rules, dict) else ""
    names = _names(log)
    out = Text()
    out.append(f"cfarena replay · match {log.get('match_id', '?')}", style="bold")
    out.append(f" · {preset}{' (' + overrides + ')' if overrides else ''}")
    out.append(f" · {log.get('players')} players · status {log.get('status', '?')}\n")
    out.append("seats: " + " · ".join(f"{i} {n}" for i, n in enumerate(names)) + "\n")
    if seat is None:
        out.append("view: all-seeing (every hand shown)", style="cyan")
    else:
        out.append(f"view: seat {seat} ({names[seat]}), only what it saw", style="cyan")
    return out


def _who(seat: int | None, viewer: int | None, names: Sequence[str]) -> str:
    if seat is None:
        return "the referee"
    you = " (you)" if seat == viewer else ""
    return f"seat {seat}{you}"


def offered_text(frame: Frame) -> Text:
    """The moves a decision offered, in the order the seat got them (the index its
    answer names), the one applied marked."""
    out = Text("   offered: ")
    for index, key in enumerate(frame.offered):
        if index:
            out.append(" · ")
        chosen = key == frame.move
        out.append(f"{index} {key}", style="bold reverse" if chosen else "")
    if frame.move in frame.offered:
        who = "the referee played" if frame.fallback else "chose"
        out.append(f"  ({who} {frame.offered.index(frame.move)} of {len(frame.offered)})")
    return out + Text("\n")


def frame_text(frame: Frame, log: Mapping[str, Any]) -> Text:
    """One step as text: its header, events, layout, hands, boneyard, faults, scores."""
    names = _names(log)
    viewer = frame.viewer
    actions = log.get("actions", [])
    total = len(actions) if isinstance(actions, list) else 0
    out = Text()
    r = frame.round_index + 1
    if frame.kind is StepKind.ROUND_START:
        out.append(f"══ round {r} · round double {frame.layout[0].tile} ══\n", style="bold magenta")
    elif frame.kind is StepKind.ACTION:
        assert frame.action_index is not None
        head = (f"── step {frame.action_index + 1}/{total} · round {r} · "
                f"{_who(frame.actor, viewer, names)}: {frame.move}")
        if frame.ms is not None:
            head += f" · decided in {frame.ms:.2f} ms"
        if frame.fallback:
            head += " · fallback (played by the referee)"
        out.append(head + " ──\n", style="bold")
        if frame.offered:
            out.append_text(offered_text(frame))
    else:
        out.append(f"══ round {r} ends ══\n", style="bold magenta")
    for event in frame.events:
        out.append("   " + event_text(event, viewer) + "\n")
    for fault in frame.faults:
        forfeit = ", forfeits the match" if fault.get("forfeit") else ""
        out.append(f"   ⚠ fault: seat {fault.get('seat')} {fault.get('kind')} "
                   f"({fault.get('detail')}){forfeit}\n", style="red")
    if frame.kind is StepKind.ROUND_END and frame.round_end is not None:
        end = frame.round_end
        scores = " · ".join(f"seat {s} {v}" for s, v in enumerate(end.scores))
        totals = " · ".join(f"seat {s} {v}" for s, v in enumerate(frame.totals))
        out.append(f"   round scores: {scores}\n", style="green")
        out.append(f"   totals:       {totals}\n", style="green")
        return out
    for line in render_layout(frame.layout, frame.pending):
        style = "yellow" if "pending" in line else ""
        out.append("   " + line + "\n", style=style)
    if frame.pending is not None:
        p = frame.layout[frame.pending]
        out.append(f"   ▶ pending double: #{p.node} {p.tile} "
                   f"({p.capacity - p.children} of {p.capacity} free)\n", style="bold yellow")
    for s in range(frame.players):
        mark = "▸" if s == frame.current_seat else " "
        hand = frame.hands[s]
        label = f"  {mark} seat {s} {names[s]}"
        if hand is None:
            out.append(f"{label}: {frame.hand_sizes[s]} tiles\n", style="dim")
        else:
            tiles = " ".join(str(t) for t in hand) or "(empty)"
            you = " (you)" if s == viewer else ""
            out.append(f"{label}{you} [{len(hand)}]: {tiles}\n")
    if frame.drawn_tile is not None:
        out.append(f"   drawn tile: {frame.drawn_tile}\n")
    out.append(f"   boneyard: {frame.boneyard} tiles ({frame.drawable} drawable)\n", style="dim")
    return out


def match_end_text(log: Mapping[str, Any], last: Frame) -> Text:
    out = Text()
    result = log.get("result", {})
    ranks = result.get("ranks", []) if isinstance(result, dict) else []
    if log.get("status") != "finished":
        out.append(f"match not finished: {log.get('status')} ({log.get('reason', '')})\n",
                   style="bold red")
        return out
    out.append(f"match over ({log.get('reason', '')}): ", style="bold")
    out.append(" · ".join(
        f"seat {s} total {t}" + (f" rank {ranks[s]}" if s < len(ranks) else "")
        for s, t in enumerate(last.totals)
    ) + "\n")
    forfeited = result.get("forfeited", []) if isinstance(result, dict) else []
    if forfeited:
        out.append(f"forfeited: {', '.join(f'seat {s}' for s in forfeited)}\n", style="red")
    return out


def _read_key() -> str:
    """One key from a TTY stdin (arrows mapped to n/p); "" at end of input."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        ch = sys.stdin.read(1)
        if ch == "\x1b":
            seq = sys.stdin.read(2)
            return {"[C": "n", "[D": "p", "[A": "R", "[B": "r"}.get(seq, "")
        return ch
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def _round_starts(frames: Sequence[Frame]) -> list[int]:
    return [f.index for f in frames if f.kind is StepKind.ROUND_START]


def next_position(frames: Sequence[Frame], pos: int, key: str) -> int | None:
    """Where a key moves the cursor; None to quit (unknown keys stay put)."""
    last = len(frames) - 1
    starts = _round_starts(frames)
    if key in ("q", "Q", "", "\x03", "\x04"):
        return None
    if key in ("n", " ", "\r", "\n"):
        return min(pos + 1, last)
    if key == "p":
        return max(pos - 1, 0)
    if key == "r":
        return next((s for s in starts if s > pos), last)
    if key == "R":
        current = max((s for s in starts if s <= pos), default=0)
        if pos > current:
            return current
        return max((s for s in starts if s < current), default=0)
    return pos


def replay_terminal(
    log: Mapping[str, Any],
    seat: int | None = None,
    show_all: bool = False,
    console: Console | None = None,
    keys: Callable[[], str] | None = None,
) -> int:
    """Replay a log in the terminal; returns how many frames were printed.

    `seat` None is the all-seeing view, else the match as that seat saw it.
    With `show_all` every step is printed in order; otherwise single keys
    step through it (`keys` returns one key per call, "" to stop; by default
    keys come from the TTY, and a non-TTY stdin falls back to `show_all`).
    Raises `LogError` if the log's moves cannot be replayed.
    """
    console = console or Console()
    frames = build_frames(log, seat)
    if not show_all and keys is None:
        if sys.stdin.isatty():
            keys = _read_key
        else:
            show_all = True
    if show_all:
        console.print(header_text(log, seat))
        for frame in frames:
            console.print(frame_text(frame, log), end="", soft_wrap=True)
        console.print(match_end_text(log, frames[-1]), end="", soft_wrap=True)
        return len(frames)
    assert keys is not None
    pos, shown = 0, 0
    while True:
        console.clear()
        parts: list[Text] = [header_text(log, seat), frame_text(frames[pos], log)]
        if pos == len(frames) - 1:
            parts.append(match_end_text(log, frames[pos]))
        parts.append(Text(f"frame {pos + 1}/{len(frames)} · {KEY_HELP}", style="dim"))
        console.print(Group(*parts))
        shown += 1
        moved = next_position(frames, pos, keys())
        if moved is None:
            return shown
        pos = moved
