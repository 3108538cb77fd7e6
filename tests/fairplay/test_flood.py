"""A bot floods the referee's Unix socket with connections (issue 20, attack 2).

`bots/flood.py`, when its match starts, forks 4 processes that each open up to
5,000 connections to `/run/cfarena/arena.sock` (20,000 in all: the referee's own
RLIMIT_NOFILE here), send the HTTP/2 preface on each and nothing more. Without a
bound the referee runs out of descriptors: its watchdog dies, other bots cannot
connect, forks fail and the run exits 1. The referee's gate (referee/gate.py)
lets one sandbox hold 8 connections; the ninth is closed at once and stops the
sandbox with a limit fault.

What must hold: the run finishes (exit 0, no traceback), both matches are stored
finished, the flooding seat has exactly one fault, "limit" / "connection limit 8
reached" (also its stored exit line), and forfeited; the other bot's seats have no
fault; no sandboxed process is left.
"""

from __future__ import annotations

from tests.fairplay.arena import Arena, assert_fair_run

SCENARIOS = ("flood",)


def test_a_connection_flood_is_the_flooding_bots_fault_and_the_run_finishes(
        arena: Arena) -> None:
    outcome = arena.outcome("flood")
    seats = outcome.seats("evil")
    assert len(seats) == 2, outcome.describe()
    for seat in seats:
        assert seat.one("flood-start") == {"each": 5000, "forks": 4}  # the attack ran
        faults = [(f.kind.value, f.detail) for f in seat.faults]
        assert faults == [("limit", "connection limit 8 reached")], \
            (seat.match.key, faults, seat.output_tail())
        assert seat.log is not None and seat.log.exit == "connection limit 8 reached"
        assert seat.match.seats[seat.seat].forfeited
    for seat in outcome.seats("random"):
        assert seat.faults == [] and not seat.match.seats[seat.seat].forfeited
    assert_fair_run(outcome, arena)
