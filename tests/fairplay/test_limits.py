"""Attacks 7, 8, 9 and 12: a bot exhausts processes, memory, output, CPU or descriptors.

Each attack starts when the bot's match starts, in every process of the bot:

- `bots/fork_bomb.py` starts 100 children that sleep (`--max-processes 32`);
- `bots/memory_hog.py` allocates 16 MiB blocks without end (`--memory-mb 256`);
- `bots/output_flood.py` writes 4 GiB to stdout (the output limit is 16 MiB);
- `bots/cpu_spinner.py` busy-loops in four children, so no single process
  reaches RLIMIT_CPU first (`--cpu-seconds 1`; a 120 s move time, so only the
  CPU limit can stop it);
- `bots/socket_hog.py` parks data in pipes and socket pairs nobody reads
  (kernel memory, in no resident set; `--memory-mb 64`);
- `bots/memory_pair.py` runs two processes of 160 MiB each (`--memory-mb 256`),
  once with cgroups and once without (`CFARENA_CGROUPS=off`: the /proc watchdog);
- `bots/short_children.py` burns CPU in 50 ms children reaped by the kernel
  (SIGCHLD ignored; `--cpu-seconds 1`);
- `bots/descriptor_hog.py` opens files, socket pairs and connections to the
  referee until it gets EMFILE (no fault: the referee must be unharmed).

What must hold, per match: the bot's seat has exactly one fault, of kind
"limit", whose detail names the limit ("process limit 32 reached", "memory
limit 256 MiB exceeded", "output limit 16 MiB exceeded", "CPU time limit 1 s
exceeded"), and so does the exit line stored with its output; the seat
forfeited and the match finished with the fallback for it. The fork bomb
also sees fork fail (EAGAIN) at the limit. The flood's stored log (and its
--log-dir copy) stays under 100 KiB and says how many bytes were not kept.
"""

from __future__ import annotations

import re

from tests.fairplay.arena import Arena, Outcome, Seat, assert_fair_run

SCENARIOS = ("fork_bomb", "memory_hog", "output_flood", "cpu_spinner", "cpu_orphans",
             "socket_hog", "memory_pair", "memory_pair_proc", "short_children",
             "descriptor_hog")
MIB = 1024 * 1024


def _limit_faults(outcome: Outcome, detail: str) -> list[Seat]:
    seats = outcome.seats("evil")
    assert len(seats) == 2, outcome.describe()
    for seat in seats:
        faults = [(f.kind.value, f.detail) for f in seat.faults]
        assert faults == [("limit", detail)], (seat.match.key, faults, seat.output_tail())
        assert seat.log is not None and seat.log.exit == detail, seat.log
        assert seat.match.seats[seat.seat].forfeited  # played out with the fallback
    return seats


def test_fork_bomb_hits_the_process_limit(arena: Arena) -> None:
    outcome = arena.outcome("fork_bomb")
    assert len(outcome.seats("evil")) == 2, outcome.describe()
    for seat in outcome.seats("evil"):
        # fork fails at the limit (the pids cgroup refuses it)... though the watchdog,
        # which sees the refusal too, may stop the sandbox before the bot says so
        progress = seat.all("fork-progress")
        assert progress and max(p["started"] for p in progress) < 32, progress
        for failed in seat.all("fork-failed"):
            assert failed["error"] == "EAGAIN", failed
            assert failed["after"] < 32, failed
    _limit_faults(outcome, "process limit 32 reached")  # ...and reaching it is a fault
    assert_fair_run(outcome, arena)


def test_memory_hog_hits_the_memory_limit(arena: Arena) -> None:
    outcome = arena.outcome("memory_hog")
    for seat in _limit_faults(outcome, "memory limit 256 MiB exceeded"):
        reached = max(p["allocated_mib"] for p in seat.all("memory"))
        assert reached >= 128, seat.output_tail()  # it was allocating when stopped
        assert seat.all("memory-error") == []  # the watchdog, not the RLIMIT_AS backstop
    assert_fair_run(outcome, arena)


def test_output_flood_hits_the_output_limit(arena: Arena) -> None:
    outcome = arena.outcome("output_flood")
    for seat in _limit_faults(outcome, "output limit 16 MiB exceeded"):
        assert seat.log is not None
        assert seat.log.output_bytes > 16 * MIB
        stored = seat.log.output
        assert len(stored.encode()) < 100 * 1024
        dropped = re.search(r"\[\.\.\. (\d+) bytes not kept \.\.\.\]", stored)
        assert dropped is not None, stored[:500]
        assert int(dropped.group(1)) > 16 * MIB - 100 * 1024
        assert seat.one("output")["planned_bytes"] == 4096 * MIB
        assert seat.all("output-done") == []
        copy = outcome.log_dir / f"{seat.match.id}-seat{seat.seat}-evil.log"
        assert copy.stat().st_size < 100 * 1024
    assert_fair_run(outcome, arena)


def test_cpu_spinner_hits_the_cpu_limit(arena: Arena) -> None:
    outcome = arena.outcome("cpu_spinner")
    for seat in _limit_faults(outcome, "CPU time limit 1 s exceeded"):
        assert seat.one("cpu")["spinners"] == 4
    assert_fair_run(outcome, arena)


def test_cpu_burnt_in_orphans_that_init_reaps_counts(arena: Arena) -> None:
    """Orphans that live less than a poll and are reaped by the sandbox's init (not by
    the bot) still count: init's reaped CPU is the bot's, also in a fork server's
    sandbox, where init and the fork server are otherwise not charged."""
    outcome = arena.outcome("cpu_orphans")
    for seat in _limit_faults(outcome, "CPU time limit 1 s exceeded"):
        assert seat.one("cpu")["orphans"] is True
    assert_fair_run(outcome, arena)


def test_memory_parked_in_the_kernel_counts(arena: Arena) -> None:
    """Data in pipes and socket pairs nobody reads is kernel memory, no process's
    resident set: the sandbox's memory cgroup is charged for it."""
    outcome = arena.outcome("socket_hog")
    for seat in _limit_faults(outcome, "memory limit 64 MiB exceeded"):
        # stopped while parking or while holding it (10 s, then it would play on): it
        # parked half the limit and more, its resident set stayed well under the limit
        parked = seat.all("parked") + seat.all("parked-all")
        assert parked, seat.output_tail()
        assert max(p["mib"] for p in parked) >= 32, parked
        assert max(p["rss_mib"] for p in parked) < 48, parked
    assert_fair_run(outcome, arena)


def test_the_memory_of_all_processes_counts_together(arena: Arena) -> None:
    """Two processes of 160 MiB each under a 256 MiB limit: a breach, whether the
    kernel counts (a memory cgroup) or the /proc watchdog (no cgroups)."""
    for name in ("memory_pair", "memory_pair_proc"):
        outcome = arena.outcome(name)
        for seat in _limit_faults(outcome, "memory limit 256 MiB exceeded"):
            assert seat.one("pair")["helpers"] == 2
        assert_fair_run(outcome, arena)


def test_cpu_of_children_shorter_than_a_poll_counts_at_once(arena: Arena) -> None:
    """Children of 50 ms each, reaped by the kernel (SIGCHLD ignored): their CPU time
    counts in full, and the limit (1 s) stops the bot within a second of reaching it."""
    outcome = arena.outcome("short_children")
    for seat in _limit_faults(outcome, "CPU time limit 1 s exceeded"):
        burnt = [p["seconds"] for p in seat.all("burnt")]
        assert burnt, seat.output_tail()
        # the bot's own start-up CPU counts too: its children burnt less than the 1 s
        # (but at least half of it) by the time it was stopped, and not a second more
        assert 0.5 <= burnt[-1] <= 1 + 1.0, burnt[-5:]
    assert_fair_run(outcome, arena)


def test_descriptors_end_at_the_sandbox_limit(arena: Arena) -> None:
    """A bot that opens files and socket pairs without end gets EMFILE at its own
    RLIMIT_NOFILE (256), far below the referee's; that is no fault, and the referee
    plays on unharmed. (Connections to the referee are capped by its gate first:
    test_flood.py.)"""
    outcome = arena.outcome("descriptor_hog")
    seats = outcome.seats("evil")
    assert len(seats) == 2, outcome.describe()
    for seat in seats:
        seen = seat.one("descriptors")
        assert seen["stopped_by"] == "EMFILE" and seen["limit"] == 256, seen
        assert seen["open_before"] + seen["held"] == 256, seen
        assert seat.faults == [], seat.faults
        assert not seat.match.seats[seat.seat].forfeited
    assert_fair_run(outcome, arena)
