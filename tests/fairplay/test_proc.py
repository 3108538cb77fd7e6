"""Attacks 1 and 3: a bot reads other processes through /proc.

`bots/snoop_proc.py`, at start and again once its match has begun (its
opponent's process is live then), lists every process it can see and reads
their command lines and environments, looking for a CFARENA_TOKEN other than
its own and for the referee; it then tries to read the memory, environment
and root of PID 1 and of its parent, and to ptrace them.

What must hold: it sees only its own sandbox (PID 1 is bwrap's init, the
other PID is itself), runs as a sandbox uid, finds no token but its own in
its own environment and no referee; memory, environment and root of PID 1
(which is also its parent) are denied and ptrace is refused.
"""

from __future__ import annotations

import os

from tests.fairplay.arena import SANDBOX_UID_MIN, Arena, assert_fair_run

SCENARIOS = ("snoop_proc",)


def test_proc_shows_only_its_own_sandbox_and_no_foreign_token(arena: Arena) -> None:
    outcome = arena.outcome("snoop_proc")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    uids = set()
    for seat in seats:
        assert seat.faults == []
        for phase in ("start", "match"):
            visible = seat.one("proc-visible", phase=phase)
            me = visible["self"]
            assert visible["pids"] == sorted({1, me}), visible
            assert os.path.basename(visible["pid1"]) == "bwrap", visible
            assert visible["uid"] >= SANDBOX_UID_MIN
            uids.add(visible["uid"])
            environ = seat.one("proc-environ", phase=phase)
            assert environ["foreign_tokens"] == 0, environ
            assert environ["readable"] == [me], environ
            assert environ["own_token_in"] == [me], environ
            assert environ["denied"] == {"1": "EACCES"}, environ
            referee = seat.one("proc-referee", phase=phase)
            assert referee["visible"] is False, referee
    assert len(uids) == 2  # a fresh uid per process


def test_proc_memory_and_environment_of_pid1_and_parent_denied(arena: Arena) -> None:
    outcome = arena.outcome("snoop_proc")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    for seat in seats:
        for phase in ("start", "match"):
            poked = seat.one("proc-mem", phase=phase)
            for pid in sorted({1, poked["ppid"]}):
                # not the referee: bwrap's init, and none of it readable
                assert os.path.basename(poked[f"{pid}/cmdline0"]) == "bwrap", poked
                assert poked[f"{pid}/mem"] == "open: EACCES", poked
                assert poked[f"{pid}/environ"] == "EACCES", poked
                assert poked[f"{pid}/root"] == "EACCES", poked
                assert poked[f"{pid}/ptrace"] == "EPERM", poked
