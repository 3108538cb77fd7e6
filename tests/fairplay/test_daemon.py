"""Attack 10: a bot leaves processes running behind it.

`bots/daemon.py` double-forks a daemon in a new session (ignoring SIGTERM and
SIGHUP, sleeping 1000 s) at start, when its match starts and when it ends;
each daemon's command line carries a marker unique to this test run and the
nonce of the bot process that started it. A watcher samples the machine's
processes every 50 ms during the run.

What must hold: the daemons did run, each was gone within a second of the end
of the match its bot process played (the stored finished_at), and after the
tournament no process carries the marker and none runs as a sandbox uid.
"""

from __future__ import annotations

from tests.fairplay.arena import Arena, assert_fair_run, cmdline_processes

SCENARIOS = ("daemon",)
SLACK_S = 1.0


def test_no_process_outlives_its_match(arena: Arena) -> None:
    outcome = arena.outcome("daemon")
    assert_fair_run(outcome, arena)
    assert cmdline_processes(arena.daemon_mark) == []
    seats = outcome.seats("evil")
    assert len(seats) == 2
    by_nonce = {seat.one("nonce"): seat for seat in seats}
    assert len(by_nonce) == 2
    for seat in seats:
        spawned = seat.one("daemon", phase="start")
        assert spawned["launcher_exit"] == 0, spawned
    sightings = arena.daemon_watch.seen
    # every process that played left a daemon behind it (the probe worked); a warm
    # process that was started but never played (stopped instead, e.g. because it
    # was alive during another rotation of its deal) may have left one too: those
    # must be gone by the end of the run (checked above by marker)
    assert set(by_nonce) <= {s.nonce for s in sightings.values()}, sightings
    for pid, sighting in sightings.items():
        if sighting.nonce not in by_nonce:
            continue
        match = by_nonce[sighting.nonce].match
        assert match.finished_at is not None
        late = sighting.last_seen - match.finished_at.timestamp()
        assert late <= SLACK_S, (f"daemon pid {pid} ({sighting.phase}) still alive "
                                 f"{late:.2f} s after its match {match.key} ended")
