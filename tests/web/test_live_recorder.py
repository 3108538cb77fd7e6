"""A live-view recorder on a real `cfarena serve --rule play_drawn=may` (issue 20): a
spectator follows every match it can while two dial-in bots play (random, which
keeps a fitting drawn tile now and then, and montecarlo, which takes a while (a pause) over
each decision, a drawn tile's too). Afterwards, from each match's log: every message
holds exactly the public keys, ends where the match started, where it ended or just
before a PLAY that began a turn (never where only a seat deciding on a drawn tile
stops the referee), and is exactly what the public events up to there give
(`web.live`); and the seats did keep fitting drawn tiles while being watched."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cfarena.engine import EventKind, Move, MoveKind, apply_move, legal_moves, public_events
from cfarena.engine import public_view as engine_public_view
from cfarena.match.resimulation import resimulate, start_match
from cfarena.server.web.live import (
    EVENT_KEYS,
    PLACED_KEYS,
    RECENT_EVENTS,
    TABLE_KEYS,
    PublicTable,
    live_message,
)
from tests.harness.slow_bots import slow_bot_class
from tests.web.arena import SseStream, WebArena

MATCHES = 4  # followed from start to end


def _kept_fitting_tiles(log: dict[str, Any]) -> int:
    """How often a seat passed with a drawn tile it could have played (full log)."""
    state = start_match(log)
    kept = 0
    for action in log["actions"]:
        move = Move.parse(str(action["move"]))
        if move.kind is MoveKind.PASS and any(m.kind is MoveKind.PLAY
                                              for m in legal_moves(state)):
            kept += 1
        apply_move(state, move)
    return kept


def _check_stream(stream: SseStream, log: dict[str, Any]) -> int:
    """Every message of one match's stream against its public events; the number of
    table messages."""
    start = start_match(log)
    events = public_events(resimulate(log).state)
    first = len(start.events)
    table = PublicTable.start(engine_public_view(start), public_events(start), 0)
    sent, checked = None, 0
    for _t, kind, data in stream.events:
        if kind not in ("snapshot", "update"):
            continue
        message = json.loads(data)
        assert set(message) == TABLE_KEYS, sorted(set(message) ^ TABLE_KEYS)
        assert all(set(e) == EVENT_KEYS for e in message["events"])
        assert all(set(p) == PLACED_KEYS for p in message["layout"])
        cut = message["event_count"]
        assert cut == first or cut == len(events) or (
            events[cut].kind is EventKind.PLAY
            and events[cut - 1].kind is not EventKind.DRAW), (
            f"a message ends at event {cut}: {events[cut - 1: cut + 1]}")
        assert cut >= table.count
        table.fold(events[table.count:cut])
        over = cut == len(events)
        if kind == "snapshot":
            since = max(0, cut - RECENT_EVENTS)
        else:
            assert sent is not None, "an update before the snapshot"
            since = sent
        expected = live_message(table, events[since:cut], since, over)
        assert message == json.loads(json.dumps(expected)), (kind, cut)
        sent = cut
        checked += 1
    return checked


def test_the_live_view_of_a_play_drawn_may_ladder_is_its_public_events(
        tmp_path: Path) -> None:
    arena = WebArena(tmp_path, f"sqlite:///{tmp_path / 'arena.db'}")
    followed: dict[str, SseStream] = {}
    try:
        arena.add_bots(["keeper", "thinker"])
        arena.serve("--players", "2", "--rules", "maltese", "--rule", "play_drawn=may",
                    "--rule", "rounds=2", "--concurrency", "1")
        # montecarlo takes 40 ms a decision: a 2 ms search and a pause (slow_bots), the
        # pace of a thinking bot without its CPU
        thinker = slow_bot_class(tmp_path, "montecarlo", 0.038)
        for name, sample, budget in (("keeper", "random", "0"), ("thinker", thinker, "2")):
            arena.dial_in(name, sample, f"127.0.0.1:{arena.port}", arena.tokens[name],
                          "--retries", "50", "-q", env={"CFARENA_MC_BUDGET_MS": budget})
        ladder = arena.sse("/api/events")
        deadline = time.monotonic() + 90
        while len(followed) < MATCHES:
            assert time.monotonic() < deadline, f"followed {len(followed)} matches"
            for _t, kind, data in list(ladder.events):
                match_id = json.loads(data)["match"]
                if kind == "started" and match_id not in followed and len(followed) < MATCHES:
                    followed[match_id] = arena.sse(f"/api/matches/{match_id}/live")
            time.sleep(0.02)
        for match_id, stream in followed.items():
            assert stream.done.wait(60), f"the stream of {match_id} did not end"
            assert stream.status == 200 and stream.kinds()[-2:] == ["ended", "stored"]
        logs = {m: arena.get(f"/api/matches/{m}/log").json() for m in followed}
    finally:
        arena.stop_all()
    messages = sum(_check_stream(followed[m], logs[m]) for m in followed)
    kept = sum(_kept_fitting_tiles(log) for log in logs.values())
    assert messages >= 3 * MATCHES, messages
    assert kept >= 1, "no seat kept a fitting drawn tile: the case tests nothing"
