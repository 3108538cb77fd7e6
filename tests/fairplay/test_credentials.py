"""Attacks 4 and 5: a bot tries to take a seat that is not its own.

`bots/steal_seat.py` looks for credentials wherever it can (CFARENA_TOKEN in
every readable /proc/*/environ, `--token` on visible command lines, files in
the non-system places it can see), connects with a made-up token, and, once
its match has started on its first connection, connects again with its own
one-time credential.

What must hold: (a) no credential but its own is visible anywhere; (b) a
made-up token is refused UNAUTHENTICATED; (c) its own credential presented a
second time while the first connection is live is refused PERMISSION_DENIED
"this one-time credential was already used", and the first connection plays
on undisturbed (no fault).
"""

from __future__ import annotations

from tests.fairplay.arena import Arena, Seat, assert_fair_run

SCENARIOS = ("steal_seat",)


def _seats(arena: Arena) -> list[Seat]:
    outcome = arena.outcome("steal_seat")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    return seats


def test_no_other_credential_is_visible(arena: Arena) -> None:
    for seat in _seats(arena):
        hunt = seat.one("token-hunt")
        assert hunt["foreign_tokens"] == 0, hunt
        assert seat.all("token-foreign") == []


def test_made_up_credential_is_unauthenticated(arena: Arena) -> None:
    for seat in _seats(arena):
        assert seat.one("token-made-up") == {"code": "UNAUTHENTICATED",
                                             "details": "unknown or missing token"}


def test_own_credential_twice_is_permission_denied(arena: Arena) -> None:
    for seat in _seats(arena):
        reuse = seat.one("token-reuse")
        assert reuse["code"] == "PERMISSION_DENIED", reuse
        assert reuse["details"] == "this one-time credential was already used", reuse
        # the first connection was not disturbed
        assert seat.one("token-reuse-after")["still_playing"] is True
        assert seat.faults == []
        assert not seat.match.seats[seat.seat].forfeited
