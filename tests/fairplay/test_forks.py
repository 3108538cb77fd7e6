"""Fork servers: a bot process forked in a sandbox inherits nothing from the last one.

Sandboxed SDK bots are not started afresh for every match: a fork server in
their sandbox, which loaded gRPC and the SDK once, forks a child per match
(`cfarena.sdk.forkserver`, `tournament/forks.py`). `bots/stash.py` plays six
matches (3 deals, 2 rotations); in each it looks for what an earlier child of
its sandbox left and then leaves everything it can: files in /tmp, /dev/shm
and $HOME and in a directory it makes read-only, a System V shared memory
segment and another whose owner it sets to another uid, a daemon serving its
nonce on an abstract Unix socket, and (when its match ends) a daemon that keeps
sending SIGKILL to every process it may, the cleaner after it included; it
tries a POSIX message queue and to stop the fork server with SIGSTOP.

What must hold: children were really forked, several by the same fork server
(the attack had a chance); each left its stash (the probes saw it there) and
no child found anything of another's; every child ran as a user of its own,
not the fork server's, and could not signal the fork server; the tournament
completed normally.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

from cfarena.server.bundled_bots import bundled_command
from cfarena.server.sandbox import LimitWatch, python_paths
from cfarena.server.tournament.forks import ForkServer, fork_plan
from tests.fairplay.arena import Arena, Seat, assert_fair_run
from tests.harness.sandboxes import SANDBOX_UID_MIN

SCENARIOS = ("stash",)


def test_nothing_passes_from_one_forked_child_to_the_next(arena: Arena) -> None:
    outcome = arena.outcome("stash")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 10  # 5 deals, 2 rotations
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
        assert len(left["files"]) == 4 and left["shm"] is True, left
        assert left["given_shm"] is True, left
        assert left["daemon"] == left["nonce"], left
        assert left["mqueue"] == "EPERM", left  # refused by the seccomp filter
        # ... and found nothing of anyone else's
        assert found["files"] == {} and found["shm"] is False, found
        assert found["given_shm"] is False, found
        assert found["daemon"] is None, found
    assert len(uids) == len(seats)  # a fresh user per child
    # the attack had its chance: some fork server forked several of these children
    assert max(servers.values()) >= 2, servers
    _no_sandbox_hosts_a_deal_it_heard_of(seats)


def _overlap(a: Seat, b: Seat) -> bool:
    sa, fa, sb, fb = a.match.started_at, a.match.finished_at, b.match.started_at, \
        b.match.finished_at
    assert sa and fa and sb and fb
    return sa < fb and sb < fa


def _no_sandbox_hosts_a_deal_it_heard_of(seats: list[Seat]) -> None:
    """A later child of a fork server never plays a deal that an earlier child of it
    played, or that its bot played while such a child was alive (its match running)."""
    by_server: dict[str, list[Seat]] = defaultdict(list)
    for seat in seats:  # in the order their matches started
        by_server[seat.one("stash-found")["fork_server"]].append(seat)
    for hosted in by_server.values():
        for i, earlier in enumerate(hosted):
            heard = {s.match.seed for s in seats if _overlap(s, earlier)}
            heard.add(earlier.match.seed)
            for later in hosted[i + 1:]:
                assert later.match.seed not in heard, (earlier.match.key, later.match.key)


def test_only_the_arenas_own_interpreter_runs_a_fork_server(tmp_path: Path) -> None:
    """A fork server holds CAP_SETUID: no entrant's interpreter (a venv of their own,
    a copy or a link of python elsewhere) and no module of theirs may run in it."""
    bundled = bundled_command("greedy")
    plan = fork_plan([*bundled, "--capacity", "1"])
    assert plan is not None and plan.preload == ("cfarena.bots.greedy",)
    assert plan.args[:2] == ("run", "cfarena.bots.greedy:GreedyBot")
    # an entrant's module on the arena's interpreter: forked, but not preloaded
    entrant = fork_plan([sys.executable, "-m", "cfarena.sdk", "run", "evil_bot"])
    assert entrant is not None and entrant.preload == ()
    elsewhere = tmp_path / "venv" / "bin"
    elsewhere.mkdir(parents=True)
    (elsewhere / "python").symlink_to(sys.executable)
    assert fork_plan([str(elsewhere / "python"), "-m", "cfarena.sdk", "run", "x"]) is None
    assert fork_plan(["/usr/bin/env", "-m", "cfarena.sdk", "run", "x"]) is None


def test_the_working_directory_cannot_inject_code_into_the_fork_server(
        tmp_path: Path) -> None:
    """The fork server runs `python -I`: modules in the working directory (a `json.py`,
    a `sitecustomize.py`) are not imported by it; its child, like a plain bot
    process, has the directory on its path and has no capabilities."""
    work = tmp_path / "work"
    work.mkdir()
    probe = ("import os, sys\n"
             "status = open('/proc/self/status').read()\n"
             "caps = [l for l in status.splitlines() if l.startswith('CapEff')]\n"
             "print('INJECTED', __name__, os.getpid(), caps, flush=True)\n")
    for name in ("json.py", "sitecustomize.py", "usercustomize.py", "grpc.py", "asyncio.py"):
        (work / name).write_text(probe)
    (work / "target_bot.py").write_text(probe)  # a bot module: imported by the child only
    output = asyncio.run(_fork_once(work))
    server_lines = [ln for ln in output[0].splitlines() if "INJECTED" in ln]
    assert server_lines == [], output[0]
    child_lines = [ln for ln in output[1].splitlines() if "INJECTED" in ln]
    # the child imported the bot module from its working directory, without capabilities
    assert any("target_bot" in ln and "0000000000000000" in ln for ln in child_lines), output


GC_PROBE = ("import gc\n"
            "print('GC', gc.isenabled(), gc.get_freeze_count(), gc.get_threshold(),\n"
            "      flush=True)\n")


def _gc_report(output: str) -> tuple[bool, int, str]:
    """What GC_PROBE printed: whether the collector was on, how many objects were
    frozen, and the collector's thresholds."""
    lines = [ln for ln in output.splitlines() if ln.startswith("GC ")]
    assert len(lines) == 1, output
    enabled, frozen, threshold = lines[0].removeprefix("GC ").split(" ", 2)
    return enabled == "True", int(frozen), threshold


def test_a_forked_child_runs_with_the_collector_on_and_start_up_frozen(
        tmp_path: Path) -> None:
    """The fork server loads its runtime and the bots it preloads with the collector
    off, then freezes what it loaded and turns the collector back on before it serves:
    a child's code (its bot module's import) runs with the collector on, at its usual
    thresholds, and the server's heap, preloaded bots included, frozen."""
    frozen = {}
    bots = ("cfarena.bots.greedy", "cfarena.bots.montecarlo", "cfarena.bots.random_bot",
            "cfarena.bots.smart")
    for preload in ((), bots):
        work = tmp_path / f"work{len(preload)}"
        work.mkdir()
        (work / "target_bot.py").write_text(GC_PROBE)
        _server, child = asyncio.run(_fork_once(work, preload))
        enabled, frozen[preload], threshold = _gc_report(child)
        assert enabled, child
        assert threshold == str(gc.get_threshold()), child
    without, with_bots = frozen.values()
    assert without > 10_000  # the runtime's objects, not a handful
    # the preloaded bots' objects too (some 300): frozen after they loaded
    assert with_bots > without + 200


async def _fork_once(work: Path, preload: tuple[str, ...] = ()) -> tuple[str, str]:
    watch = LimitWatch()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8",
           "PYTHONUNBUFFERED": "1"}
    server = ForkServer("probe", "probe#fork", env, watch, binds=[*python_paths(), work],
                        workdir=work, preload=preload)
    try:
        await server.start(60.0)
        child = await server.fork("probe#1", ["run", "target_bot", "--token", "x",
                                              "--server", "unix:/nonexistent", "--retries", "0"],
                                  {**env, "CFARENA_TOKEN": "x"})
        await asyncio.wait_for(child.wait(), 60.0)
        await child.drained()
        assert server.sandbox is not None
        return server.sandbox.output.text(), child.output.text()
    finally:
        await server.stop()
        await watch.close()
