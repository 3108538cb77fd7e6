"""A match as one seat saw it (`web.seat_view`), re-simulated from its game log, is what
the match law sent that seat: for every Turn a bot was sent in an in-process match
(the referee's law, `cfarena.sdk.local.play_match`), the seat view has the same turn id,
hand, drawn tile and offered moves in the same order, and the move applied; a
timed-out decision shows the fallback and its fault; nothing of another hand or of the
boneyard is in the seat's record, and its seed only when revealed; `replay --seat`
shows the same offers."""

from __future__ import annotations

import json

import pytest

from cfarena.bots import make_bot
from cfarena.engine import Rules
from cfarena.match.log_format import record_to_log
from cfarena.sdk import TimeControl, Turn
from cfarena.sdk.local import play_match
from cfarena.server.replay.frames import build_frames
from cfarena.server.web.seat_view import seat_record, seat_view
from tests.web.entrant_games import tiles_in, unseen_tiles

SEED = 20261206


@pytest.mark.parametrize("preset", ["standard", "maltese"])
def test_each_turn_is_what_the_seat_was_sent(preset: str) -> None:
    sent: list[tuple[Turn, object]] = []
    played = play_match([make_bot("greedy") for _ in range(3)],
                        Rules.from_options({"preset": preset, "rounds": 2}), SEED, "m",
                        on_turn=lambda turn, choice: sent.append((turn, choice)),
                        time_control=TimeControl(strikes=3), timeouts={4, 9})
    log = record_to_log(played.record)
    for seat in range(3):
        view = seat_view(log, seat)
        assert view.error is None
        asked = {t.turn_id: t for t, _choice in sent if t.seat == seat}
        assert set(asked) <= {t.turn_id for t in view.turns}  # and its timed-out ones
        for turn in view.turns:
            if turn.turn_id not in asked:  # timed out: never sent to the bot
                assert turn.fallback
                assert turn.faults and turn.faults[0].startswith("timeout: ")
                continue
            was = asked[turn.turn_id]
            assert turn.hand == tuple(str(t) for t in was.observation.hand)
            drawn = was.observation.drawn_tile
            assert turn.drawn_tile == (None if drawn is None else str(drawn))
            assert turn.offered == tuple(m.key for m in was.legal_moves)
            assert turn.chosen in turn.offered and not turn.fallback and turn.ms is not None
            assert turn.round == was.observation.round_index
        assert [t.chosen for t in view.turns if not t.fallback] == played.chosen[seat]
        # `cfarena replay --seat` shows the same offers (one re-simulation rule for both)
        frames = build_frames(log, seat)
        assert [(f.move, f.offered) for f in frames if f.decided and f.actor == seat] == [
            (t.chosen, t.offered) for t in view.turns]
    assert sum(t.fallback for s in range(3) for t in seat_view(log, s).turns) == 2


def test_a_seats_record_holds_nothing_it_did_not_see() -> None:
    played = play_match([make_bot("greedy") for _ in range(2)],
                        Rules.from_options({"preset": "standard", "rounds": "single"}),
                        SEED, "m")
    log = record_to_log(played.record)
    for seat in range(2):
        hidden = unseen_tiles(log, seat)
        assert hidden
        line = json.dumps(seat_record(log, [seat], "abc", revealed=False))
        assert tiles_in(line, hidden) == set()
        assert str(SEED) not in line
        assert {"deals", "actions", "events", "key"}.isdisjoint(json.loads(line))
        revealed = seat_record(log, [seat], "abc", revealed=True)
        assert revealed["seed"] == str(SEED)
    with pytest.raises(ValueError, match=r"seat must be 0\.\.1"):
        seat_view(log, 2)


def test_a_forfeited_seat_sees_nothing_after_its_forfeit() -> None:
    """The referee plays on for a seat that forfeited (its fallbacks), but its bot sees
    none of that: the view ends at the forfeiting decision, with no later hand, draw or
    event; the other seats' views go on to the end."""
    sent: list[Turn] = []
    played = play_match([make_bot("greedy") for _ in range(2)],
                        Rules.from_options({"preset": "standard", "rounds": 3}), SEED, "m",
                        on_turn=lambda turn, _choice: sent.append(turn),
                        time_control=TimeControl(strikes=1), timeouts={7})
    log = record_to_log(played.record)
    (forfeit,) = [f for f in log["faults"] if f["forfeit"]]
    view = seat_view(log, forfeit["seat"])
    assert view.turns[-1].turn_id == forfeit["turn_id"] and view.turns[-1].fallback
    last_seen = max(t.round for t in view.turns)
    assert [r for r, _hand in view.hands] == list(range(last_seen + 1))
    other = seat_view(log, 1 - forfeit["seat"])
    assert len(view.events) < len(other.events)  # the match went on without it
    # the same events up to its forfeit (the other seat's draws blanked for it)
    assert [e["kind"] for e in view.events] == \
        [e["kind"] for e in other.events[:len(view.events)]]
    assert max(r for r, _hand in other.hands) > last_seen  # later rounds were dealt
