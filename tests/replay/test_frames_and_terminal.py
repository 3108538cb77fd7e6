"""Frames and the terminal replay: every step drawn, seat views leak nothing."""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest
from rich.console import Console

from cfarena.bots import make_bot
from cfarena.engine import EventKind, Move, Rules, Tile
from cfarena.match.log_format import record_to_log
from cfarena.sdk import Turn
from cfarena.sdk.local import play_match
from cfarena.server.replay import (
    StepKind,
    build_frames,
    build_views,
    replay_terminal,
    replay_text,
)

from .conftest import make_log

TILE = re.compile(r"(?<![\d.])(\d{1,2})-(\d{1,2})(?![\d.])")
BLOCK_START = ("══ round", "── step ")


def _blocks(text: str) -> list[str]:
    """The output split into one block per frame (the header before the first is dropped)."""
    blocks: list[str] = []
    for line in text.splitlines():
        if line.startswith(BLOCK_START):
            blocks.append(line + "\n")
        elif blocks:
            blocks[-1] += line + "\n"
    return blocks


def test_every_step_is_printed_with_round_ends_and_pending_marks(case_log: dict[str, Any]) -> None:
    log = case_log
    text = replay_text(log)
    frames = build_frames(log)
    steps = [ln for ln in text.splitlines() if ln.startswith("── step ")]
    assert len(steps) == len(log["actions"])
    assert steps[0].startswith(f"── step 1/{len(log['actions'])} ")
    assert steps[-1].startswith(f"── step {len(log['actions'])}/{len(log['actions'])} ")
    assert len(_blocks(text)) == len(frames)
    # every round's end and its scores, as recorded in the result
    for r, scores in enumerate(log["result"]["round_scores"]):
        assert f"══ round {r + 1} ends ══" in text
        assert "round scores: " + " · ".join(f"seat {s} {v}" for s, v in enumerate(scores)) in text
    totals = " · ".join(f"seat {s} {v}" for s, v in enumerate(log["result"]["totals"]))
    assert f"totals:       {totals}" in text
    # the pending double is marked exactly on the frames where one is pending
    pending = [f for f in frames if f.pending is not None and f.kind is not StepKind.ROUND_END]
    assert pending
    assert text.count("▶ pending double: #") == len(pending)
    for frame, block in zip(frames, _blocks(text), strict=True):
        if frame.pending is not None and frame.kind is not StepKind.ROUND_END:
            p = frame.layout[frame.pending]
            assert f"▶ pending double: #{p.node} {p.tile}" in block
            assert "pending," in block  # the layout line of that double
    # decision times and faults appear in the all-seeing view
    decided = [a for a in log["actions"] if "turn_id" in a and a.get("ms") is not None]
    assert text.count("decided in ") == len(decided)
    assert text.count("⚠ fault:") == len(log["faults"])
    assert "match over" in text


def _allowed(log: dict[str, Any], seat: int) -> list[set[Tile]]:
    """Per frame: tiles `seat` may see (own hand, layout, own draws so far, the draw-off)."""
    truth = build_frames(log)  # all-seeing frames: the ground truth
    allowed: list[set[Tile]] = []
    own_draws: set[Tile] = set()
    draw_off: set[Tile] = set()
    for f in truth:
        for e in f.events:
            if e.kind is EventKind.DRAW and e.seat == seat and e.tile is not None:
                own_draws.add(e.tile)
            if e.kind is EventKind.DRAW_OFF and e.tile is not None:
                draw_off.add(e.tile)
        hand = f.hands[seat]
        assert hand is not None
        allowed.append(set(hand) | {p.tile for p in f.layout} | own_draws | draw_off)
    return allowed


@pytest.mark.parametrize(("preset", "players", "seed"), [
    ("standard", 4, 11), ("maltese", 3, 21), ("trains", 5, 32), ("maltese", 8, 22),
])
def test_seat_view_prints_no_hidden_tile(preset: str, players: int, seed: int) -> None:
    log = make_log(preset, players, seed, (2,))
    for seat in sorted({0, 1, players // 2, players - 1}):
        allowed = _allowed(log, seat)
        blocks = _blocks(replay_text(log, seat=seat))
        assert len(blocks) == len(allowed)
        shown = 0
        for i, (block, ok) in enumerate(zip(blocks, allowed, strict=True)):
            for a, b in TILE.findall(block):
                tile = Tile.of(int(a), int(b))
                assert tile in ok, f"seat {seat}, frame {i}: hidden tile {tile} printed:\n{block}"
                shown += 1
        assert shown > 0
    # the detector works: the all-seeing replay does print tiles hidden from seat 0
    allowed = _allowed(log, 0)
    leaks = [
        t for block, ok in zip(_blocks(replay_text(log)), allowed, strict=True)
        for t in (Tile.of(int(a), int(b)) for a, b in TILE.findall(block)) if t not in ok
    ]
    assert leaks


def test_seat_frames_are_built_from_observe_only() -> None:
    log = make_log("maltese", 4, 5, (4,))
    views = build_views(log)
    truth = views[None]
    for seat in range(4):
        for f, t in zip(views[seat], truth, strict=True):
            assert f.hands[seat] == t.hands[seat]
            assert all(h is None for s, h in enumerate(f.hands) if s != seat)
            assert f.hand_sizes == t.hand_sizes and f.layout == t.layout
            for e in f.events:
                if e.kind is EventKind.DRAW and e.seat != seat:
                    assert e.tile is None
            assert all(x["seat"] == seat for x in f.faults)
            if f.actor != seat:
                assert f.ms is None
    draws = [e for f in truth for e in f.events if e.kind is EventKind.DRAW]
    assert draws and all(e.tile is not None for e in draws)


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=120, color_system=None, force_terminal=False), buf


def test_interactive_keys_step_and_jump_rounds() -> None:
    log = make_log("standard", 4, 11)
    frames = build_frames(log)
    starts = [f.index for f in frames if f.kind is StepKind.ROUND_START]
    keys = iter(["n", " ", "p", "r", "n", "R", "R", "r", "r", "x", "q"])
    console, buf = _console()
    shown = replay_terminal(log, seat=None, show_all=False, console=console,
                            keys=lambda: next(keys))
    positions = [int(m) - 1 for m in re.findall(r"^frame (\d+)/", buf.getvalue(), re.M)]
    expected = [0, 1, 2, 1, starts[1], starts[1] + 1, starts[1], starts[0], starts[1], starts[2],
                starts[2]]
    assert positions == expected
    assert shown == len(expected)


def test_interactive_stops_at_end_of_input_and_clamps() -> None:
    log = make_log("trains", 2, 31)
    n = len(build_frames(log, 1))
    keys = iter(["p", "R"] + ["r"] * 40 + ["n", ""])
    console, buf = _console()
    replay_terminal(log, seat=1, console=console, keys=lambda: next(keys))
    positions = [int(m) for m in re.findall(r"^frame (\d+)/", buf.getvalue(), re.M)]
    assert positions[:3] == [1, 1, 1]
    assert positions[-1] == n and max(positions) == n


def test_non_tty_stdin_falls_back_to_printing_every_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = make_log("maltese", 3, 21)
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    console, buf = _console()
    shown = replay_terminal(log, seat=2, show_all=False, console=console)
    assert shown == len(build_frames(log, 2))
    text = buf.getvalue()
    assert text.count("── step ") == len(log["actions"])
    assert "view: seat 2" in text


def test_a_seat_sees_the_moves_it_was_offered_and_which_it_chose() -> None:
    """The offered moves are recomputed by re-simulation: they are exactly what each
    bot's Turns held, in order, and a seat sees only its own."""
    rules = Rules.preset("maltese").with_options(rounds="single")
    offered: dict[tuple[int, int], tuple[list[str], str]] = {}

    def record(turn: Turn, choice: object) -> None:
        assert isinstance(choice, Move)
        offered[turn.seat, turn.turn_id] = ([m.key for m in turn.legal_moves], choice.key)

    bots = [make_bot("random"), make_bot("greedy"), make_bot("smart")]
    log = record_to_log(play_match(bots, rules, 17, "offered", on_turn=record).record)
    views = build_views(log)
    for seat in range(3):
        mine = 0
        for frame in views[seat]:
            action = log["actions"][frame.action_index] if frame.action_index is not None \
                else {}
            if frame.actor == seat and "turn_id" in action:
                keys, chose = offered[seat, action["turn_id"]]
                assert list(frame.offered) == keys and frame.move == chose
                mine += 1
            else:
                assert frame.offered == ()
        assert mine == sum(1 for s, _ in offered if s == seat) > 0
        text = replay_text(log, seat=seat)
        assert text.count("   offered: ") == mine
        assert text.count(" (chose ") == mine
    # the all-seeing view shows every decision's offer
    assert replay_text(log).count("   offered: ") == len(offered)
    keys, chose = offered[0, 1]
    line = next(x for x in replay_text(log, seat=0).splitlines() if x.startswith("   offered: "))
    assert line == ("   offered: " + " · ".join(f"{i} {k}" for i, k in enumerate(keys))
                    + f"  (chose {keys.index(chose)} of {len(keys)})")
