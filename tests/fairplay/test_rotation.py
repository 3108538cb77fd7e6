"""Attack 11: a bot tries to learn a duplicate rotation's deal.

With 2 players and 1 game, the tournament's two matches are the two
rotations of ONE deal: the hand `evil` holds in one is its opponent's in the
other. `bots/rotation_spy.py` records what it observes (match id, seat, its
round-0 hand, the MatchEnd as it arrives on the wire), writes its hand
everywhere it can (/tmp, $HOME, /dev/shm, /var/tmp, its own directory, its
working directory, /run/cfarena next to the referee's socket, /run), serves
it on an abstract Unix socket, and signals it to any live process of the
same bot through flock locks on files every sandbox can read (one per tile).
At start and at its match start it looks for what another process left or
signalled. Every process prints a random nonce and when it started.

What must hold: the two matches replay one seed (the attack is meaningful);
the second rotation's process did not exist yet while the first rotation was
played (it started after that match ended) and finds nothing (no file, no
socket, no lock signal) although the first did write/serve/signal; MatchEnd carries no seed
and no deal (no protobuf field 9 or 10 on the wire, none in the SDK's
result; checked on every MatchEnd the bot received here and in a 3-game run
of the same bot, since the referee does not always deliver one); the two
rotations' (started_at, finished_at) intervals do not overlap; each match had
its own process (different nonces) and an opaque match id that is not the
tournament's key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cfarena.server.sandbox import python_paths
from tests.fairplay.arena import Arena, Outcome, Seat, assert_fair_run

SCENARIOS = ("rotation_spy", "match_end")
MATCH_END_FIELDS = set(range(1, 9))  # match_id .. reason; 9 and 10 were seed and deals


def _rotations(arena: Arena) -> tuple[Outcome, Seat, Seat]:
    outcome = arena.outcome("rotation_spy")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    first, second = seats
    assert first.faults == [] and second.faults == []
    return outcome, first, second


def test_both_matches_replay_one_deal(arena: Arena) -> None:
    _, first, second = _rotations(arena)
    assert first.match.seed == second.match.seed
    assert {first.match.key[-3:], second.match.key[-3:]} == {"-r0", "-r1"}
    assert first.seat != second.seat


def _strangers_allowed(outcome: Outcome) -> dict[str, list[str]]:
    """What the private /tmp holds that no bot wrote: the directories bwrap creates there
    for what it binds below /tmp (the referee's working directory, and the Python
    paths when this checkout itself lies below /tmp, as a CI clone may)."""
    shown = [Path(outcome.tmp), *python_paths()]
    below = sorted({p.parts[2] for p in shown if len(p.parts) > 2 and p.parts[1] == "tmp"})
    return {"/tmp": below} if below else {}


def test_nothing_written_survives_into_the_next_rotation(arena: Arena) -> None:
    outcome, first, second = _rotations(arena)
    written = first.one("persist")
    assert written["/tmp/.cfarena-spy"] == "written", written  # the attempt was real
    assert written["abstract socket"] == "serving", written
    for seat in (first, second):
        for phase in ("start", "match"):
            look = seat.one("leftovers", phase=phase)
            files = {k: v for k, v in look["found"].items() if k != "lock channel"}
            assert files == {}, look
            assert look["abstract_socket"] == "ECONNREFUSED", look
            assert look["other_entries"] == _strangers_allowed(outcome), look


def _all_hands(outcome: Outcome, seat: Seat) -> list[list[str]]:
    """Every hand dealt, in every round, of the deal `seat`'s match played."""
    log: dict[str, Any] | None = outcome.game_logs.get(seat.match.id)
    assert log is not None
    return [sorted(hand) for deal in log["deals"] for hand in deal["hands"]]


def _opponent_hand(outcome: Outcome, seat: Seat) -> list[str]:
    log: dict[str, Any] | None = outcome.game_logs.get(seat.match.id)
    assert log is not None
    hands: list[list[str]] = log["deals"][0]["hands"]
    return sorted(hands[1 - seat.seat])


def test_next_rotations_process_is_not_alive_during_the_previous_rotation(arena: Arena
                                                                          ) -> None:
    _, first, second = _rotations(arena)
    assert first.match.finished_at is not None
    ended = first.match.finished_at.timestamp()
    # when its code began to run: /proc's start time is only as exact as the integer
    # boot time it is counted from (up to 1 s early), and a process can listen to
    # nothing before its code runs
    started = second.one("process-start")["now"]
    assert isinstance(started, float), started
    assert started >= ended, (
        f"the process that played {second.match.key} started {ended - started:.2f} s before "
        f"{first.match.key} (the other rotation of its deal) ended: both processes of the bot "
        f"were alive during {first.match.key}")


def test_no_live_channel_between_the_rotations_processes(arena: Arena) -> None:
    outcome, first, second = _rotations(arena)
    assert first.one("persist")["lock channel"].startswith("holding"), first.one("persist")
    for seat in (first, second):
        look = seat.one("leftovers", phase="match")
        assert look["lock_channel_error"] is None, look
        received = look["lock_channel"]
        # The channel itself is machine-wide (any two live processes can use it): what
        # must not cross it is this deal. The other scenarios of the suite run at the
        # same time with the same spy (other tournaments, other deals), so a hand of
        # theirs may arrive; a hand of this deal may not.
        this_deal = _all_hands(outcome, seat)
        assert received is None or sorted(received) not in this_deal, (
            f"the process of {seat.match.key} (seat {seat.seat}) received a hand of its own "
            f"deal over the flock channel before its match: {received}; its opponent's "
            f"round-0 hand in that match was {_opponent_hand(outcome, seat)}")


def test_match_end_carries_no_seed_and_no_deal(arena: Arena) -> None:
    _, first, second = _rotations(arena)
    more = arena.outcome("match_end")  # the same bot over 3 deals, 6 matches
    assert_fair_run(more, arena)
    seats = [first, second, *more.seats("evil")]
    assert len(seats) == 8
    # (a bot does not always get its MatchEnd: the referee may stop its process first)
    wires = [w for seat in seats for w in seat.all("match-end-wire")]
    ends = [e for seat in seats for e in seat.all("match-end")]
    assert wires and ends, "no bot process received a MatchEnd in 8 matches"
    for wire in wires:
        assert set(wire["fields"]) <= MATCH_END_FIELDS, wire
        assert {"seed", "deals"}.isdisjoint(wire["known"]), wire
    for end in ends:
        assert end["seed"] is None and end["deals"] == 0, end


def test_rotations_do_not_overlap_and_each_has_a_fresh_process(arena: Arena) -> None:
    _, first, second = _rotations(arena)
    a, b = first.match, second.match
    assert a.started_at and a.finished_at and b.started_at and b.finished_at
    assert a.finished_at <= b.started_at, (a.key, a.started_at, a.finished_at,
                                           b.key, b.started_at, b.finished_at)
    assert first.one("nonce") != second.one("nonce")
    seen = [seat.one("observed") for seat in (first, second)]
    assert seen[0]["match_id"] != seen[1]["match_id"]
    for seat, observed in zip((first, second), seen, strict=True):
        assert observed["nonce"] == seat.one("nonce")
        assert observed["seat"] == seat.seat
        # an opaque id: not the stored id, not the key (table, game, rotation)
        assert observed["match_id"] not in (seat.match.id, seat.match.key)
        assert seat.match.key not in observed["match_id"]
