"""Attacks 1 and 3: a bot reads other processes through /proc.

`bots/snoop_proc.py`, at start and again once its match has begun (its
opponent's process is live then), lists every process it can see and reads
their command lines and environments, looking for a CFARENA_TOKEN other than
its own and for the referee; it then tries to read the memory, environment
and root of PID 1 and of its parent, and to ptrace them.

What must hold: it sees only its own sandbox (PID 1 is bwrap's init, PID 2
the fork server that forked it, the third PID itself), runs as a sandbox uid
of its own (not the fork server's), finds no token but its own in its own
environment and no referee; memory, environment and root of PID 1 and of its
parent (the fork server) are denied and ptrace is refused.
"""

from __future__ import annotations

import os

from tests.fairplay.arena import Arena, assert_fair_run
from tests.harness.sandboxes import SANDBOX_UID_MIN

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
            assert me > 2 and visible["pids"] == [1, 2, me], visible  # forked
            assert os.path.basename(visible["pid1"]) == "bwrap", visible
            assert visible["cmdlines"]["2"][-2:] == ["-m", "cfarena.sdk.forkserver"], visible
            assert visible["uid"] >= SANDBOX_UID_MIN
            uids.add(visible["uid"])
            environ = seat.one("proc-environ", phase=phase)
            assert environ["foreign_tokens"] == 0, environ
            assert environ["readable"] == [me], environ
            # forked: /proc/self/environ is the fork server's start environment, which
            # holds no token at all (the child's is in its memory only)
            assert environ["own_token_in"] == [], environ
            assert environ["denied"] == {"1": "EACCES", "2": "EACCES"}, environ
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
            assert poked["ppid"] == 2, poked  # the fork server
            for pid in (1, 2):
                # not the referee: bwrap's init and the fork server, none of it readable
                program = os.path.basename(poked[f"{pid}/cmdline0"])
                assert program == "bwrap" if pid == 1 else program.startswith("python"), poked
                assert poked[f"{pid}/mem"] == "open: EACCES", poked
                assert poked[f"{pid}/environ"] == "EACCES", poked
                assert poked[f"{pid}/root"] == "EACCES", poked
                assert poked[f"{pid}/ptrace"] == "EPERM", poked
