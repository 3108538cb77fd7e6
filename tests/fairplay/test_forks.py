"""Fork servers: a bot process forked in a sandbox inherits nothing from the last one.

Sandboxed SDK bots are not started afresh for every match: a fork server in
their sandbox, which loaded gRPC and the SDK once, forks a child per match
(`cfarena.sdk.forkserver`, `tournament/forks.py`). `bots/stash.py` plays six
matches (3 deals, 2 rotations); in each it looks for what an earlier child of
its sandbox left and then leaves everything it can: files in /tmp, /dev/shm
and $HOME, a System V shared memory segment, a daemon serving its nonce on an
abstract Unix socket; and it tries to stop the fork server with SIGSTOP.

What must hold: children were really forked, several by the same fork server
(the attack had a chance); each left its stash (the probes saw it there) and
no child found anything of another's; every child ran as a user of its own,
not the fork server's, and could not signal the fork server; the tournament
completed normally.
"""

from __future__ import annotations

from collections import Counter

from tests.fairplay.arena import SANDBOX_UID_MIN, Arena, assert_fair_run

SCENARIOS = ("stash",)


def test_nothing_passes_from_one_forked_child_to_the_next(arena: Arena) -> None:
    outcome = arena.outcome("stash")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 6
    servers: Counter[str] = Counter()
    uids = set()
    for seat in seats:
        assert seat.faults == []
        found = seat.one("stash-found")
        left = seat.one("stash-left")
        # forked by the fork server (PID 2), as a user of its own
        assert found["ppid"] == 2 and found["pid"] > 2, found
        assert found["uid"] >= SANDBOX_UID_MIN, found
        uids.add(found["uid"])
        assert found["signal_fork_server"] == "EPERM", found
        servers[found["fork_server"]] += 1
        # it left everything it could ...
        assert len(left["files"]) == 3 and left["shm"] is True, left
        assert left["daemon"] == left["nonce"], left
        # ... and found nothing of anyone else's
        assert found["files"] == {} and found["shm"] is False, found
        assert found["daemon"] is None, found
    assert len(uids) == len(seats)  # a fresh user per child
    # the attack had its chance: some fork server forked several of these children
    assert max(servers.values()) >= 2, servers
