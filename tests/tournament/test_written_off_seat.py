"""The seat of a bot written off (it kept failing to start) faults with a disconnect
whose detail goes to every seat's MatchEnd and to the public match pages: it quotes
why, without the arena's hint, which names the organiser's paths; the hint stays in
`written_off`, for the terminal and the seat's log."""

from __future__ import annotations

from cfarena.server.sandbox.failure_lines import failure_text, hints, missing_path_hint
from cfarena.server.tournament.warm_processes import written_off_seat


def test_a_written_off_seats_public_fault_has_no_hint_its_log_keeps_it() -> None:
    hint = missing_path_hint(["/home/organiser/bots/x"])
    reason = "bot 'x' " + failure_text("exited with code 1 before connecting",
                                       ["weights.bin: No such file or directory"], hint)
    seat = written_off_seat("x", reason, "weights.bin: No such file or directory\n")
    assert seat.connection is not None and seat.connection.close_reason is not None
    kind, detail = seat.connection.close_reason
    assert kind.value == "disconnect"
    assert detail == ("not connected: bot 'x' exited with code 1 before connecting: "
                      "bot> weights.bin: No such file or directory")
    assert "/home/organiser" not in detail and not hints(detail)
    assert hints(seat.written_off) == [hint]
