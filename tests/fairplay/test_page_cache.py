"""Attack 14: a bot carries its hand to its next rotation through the host's page cache.

With 2 players and 1 game, the tournament's two matches are the two rotations of ONE
deal: the hand `evil` holds in the first is its opponent's in the second. At its
first Turn `bots/page_cache.py` looks for a hand left in the page cache of a large
file (its own, bound read-only because it is named on its command line, or a library
under /usr), reading which pages are cached by fault-around and /proc/self/pagemap
(the strongest probe the seccomp filter leaves), then leaves its own hand there.

What must hold: the first rotation's process did leave its hand (it reads it back),
yet the second rotation's process finds no page of the region cached, so no hand
(the pool stops every bot process between the phases, and the host's caches are
dropped); every cheap probe and eviction is refused by the sandbox with the errno a
kernel without it gives; the stored tournament says which defences held. The same
on a real `cfarena worker` on PostgreSQL. And one bot never holds two seats of a
table unless the organiser says so (`--fill`).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cfarena.server.sandbox.host_reset import OFF_ENV, HostReset
from cfarena.server.storage import open_database
from cfarena.server.tournament.stored_tournament import match_phases
from tests.cli.helpers import CFARENA, run_cli, run_in_process, run_json
from tests.fairplay.arena import (
    Arena,
    Outcome,
    Seat,
    assert_fair_run,
    bot,
    evict,
    parse_probes,
    write_blob,
)
from tests.harness.postgres import PgCluster

SCENARIOS = ("page_cache", "page_cache_usr")
# the reset holds only while no other test's cfarena process plays on the host, and
# the session's arena plays this module's scenarios for any of its tests it runs:
# the whole module runs in the suite's serial step (tests/conftest.py)
pytestmark = pytest.mark.host_alone


@pytest.fixture(autouse=True)
def _host_reset_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reset, which tests/conftest.py turns off for the rest of the suite, is on for
    what these tests start (the session arena's page-cache runs turn it on themselves:
    arena.py)."""
    monkeypatch.setenv(OFF_ENV, "")


NOT_SUPPORTED = errno.errorcode[errno.EOPNOTSUPP]  # ENOTSUP on Linux: the same number
REFUSED = {
    "mincore": "ENOSYS", "cachestat": "ENOSYS", "readahead": "ENOSYS",
    "process_madvise": "ENOSYS", "io_uring_setup": "ENOSYS", "io_setup": "ENOSYS",
    "preadv2 RWF_NOWAIT": NOT_SUPPORTED, "preadv2 RWF_DONTCACHE": NOT_SUPPORTED,
    "pwritev2 RWF_NOWAIT": NOT_SUPPORTED,
    "POSIX_FADV_WILLNEED": "EINVAL", "POSIX_FADV_DONTNEED": "EINVAL",
    "POSIX_FADV_NOREUSE": "EINVAL",
    "MADV_WILLNEED": "EINVAL", "MADV_COLD": "EINVAL", "MADV_PAGEOUT": "EINVAL",
    "MADV_COLLAPSE": "EINVAL",
    # what programs need stays allowed
    "MADV_DONTNEED (allowed)": "ok", "preadv2 (allowed)": "ok",
    "POSIX_FADV_RANDOM (allowed)": "ok",
}


def _rotations(outcome: Outcome) -> tuple[Seat, Seat]:
    seats = outcome.seats("evil")
    assert len(seats) == 2, outcome.describe()
    first, second = seats
    assert first.match.seed == second.match.seed  # one deal, two views
    assert first.seat != second.seat
    assert first.match.finished_at and second.match.started_at
    assert first.match.finished_at <= second.match.started_at
    return first, second


def _opponent_hand(log: dict[str, Any] | None, seat: int) -> list[str]:
    assert log is not None
    return sorted(log["deals"][0]["hands"][1 - seat])


def _assert_nothing_carried(first_probes: list[tuple[str, Any]],
                            second_probes: list[tuple[str, Any]],
                            opponent: list[str]) -> None:
    """The first rotation's process left its hand in the page cache and read it back;
    the second's found no page of that region cached, and so no hand."""
    wrote = [out for name, out in first_probes if name == "wrote"]
    assert wrote, f"the first rotation left nothing: {first_probes}"
    assert wrote[0]["read_back"] == wrote[0]["hand"], wrote  # the carrier works
    read = [out for name, out in second_probes if name == "read"]
    assert read, f"the second rotation read nothing: {second_probes}"
    guess = read[0]["guess"]
    recovered = sorted(set(guess or []) & set(opponent))
    assert guess is None, (
        f"the second rotation recovered {len(recovered)} of its opponent's "
        f"{len(opponent)} tiles from the page cache ({read[0]['mode']}): {recovered}")
    assert read[0]["cached_pages"] == 0, read[0]  # not one bit of the region survived


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_later_rotation_finds_no_hand_in_the_page_cache(arena: Arena, scenario: str) -> None:
    outcome = arena.outcome(scenario)
    assert_fair_run(outcome, arena)
    first, second = _rotations(outcome)
    assert first.faults == [] and second.faults == []
    file = first.one("read")["file"]
    assert file == (str(arena.blob) if scenario == "page_cache" else
                    outcome.scenario.evict[0])
    _assert_nothing_carried(first.probes, second.probes,
                            _opponent_hand(outcome.game_logs[second.match.id], second.seat))


def test_the_sandbox_refuses_the_page_cache_probes(arena: Arena) -> None:
    outcome = arena.outcome("page_cache")
    for seat in _rotations(outcome):
        assert seat.one("seccomp") == REFUSED


def test_the_stored_tournament_says_which_defences_held(arena: Arena) -> None:
    outcome = arena.outcome("page_cache_usr")
    db = open_database(f"sqlite:///{outcome.db_path}")
    try:
        [tournament] = db.list_tournaments()
    finally:
        db.close()
    # this machine (root, /proc/sys writable, bwrap and libseccomp) gives both
    defences = tournament.config["defences"]
    assert {k: defences[k] for k in ("page_cache_reset", "seccomp_cache_probes")} == \
        {"page_cache_reset": True, "seccomp_cache_probes": True}
    assert tournament.config["seats_per_bot"] == 1
    assert "page cache" not in outcome.result.stderr  # no missing defence announced


def test_one_bot_is_not_given_two_seats_of_a_table_unless_asked(tmp_path: Path) -> None:
    three = ["--bot", "random", "--bot", "greedy", "--bot", "smart", "--players", "4",
             "--games", "1", "--db", f"sqlite:///{tmp_path / 'cfarena.db'}"]
    refused = run_in_process("run-tournament", *three, cwd=tmp_path)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--fill" in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr
    if (tmp_path / "cfarena.db").exists():
        db = open_database(f"sqlite:///{tmp_path / 'cfarena.db'}")
        try:
            assert db.list_tournaments() == []  # nothing was scheduled
        finally:
            db.close()
    created = run_json("tournaments", "create", *three, "--fill", cwd=tmp_path,
                       in_process=True)
    db = open_database(f"sqlite:///{tmp_path / 'cfarena.db'}")
    try:
        info = db.get_tournament(created["tournament_id"])
    finally:
        db.close()
    assert info is not None and info.config["seats_per_bot"] == 2


@pytest.mark.postgres
def test_a_worker_on_postgresql_resets_the_host_between_phases(
        pg_cluster: PgCluster, tmp_path: Path, arena: Arena) -> None:
    arena.leftovers()  # the reset holds only for a worker playing alone on the host
    url = pg_cluster.create_database("page_cache_worker")
    blob = tmp_path / "carrier" / "blob.bin"
    write_blob(blob)
    created = run_json("tournaments", "create", "--bot", bot("evil", "page_cache.py",
                                                             f"--name={blob}"),
                       "--bot", "random", "--players", "2", "--games", "1",
                       "--rule", "rounds=1", "--timeout-ms", "20000", "--db", url, cwd=tmp_path,
                       in_process=True)
    evict(blob)
    worker = subprocess.run([CFARENA, "worker", "--db", url, "--until-done", "--json",
                             "--concurrency", "2"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=240, env=dict(os.environ))
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert "Traceback" not in worker.stderr
    assert json.loads(worker.stdout)["played"] == 2
    db = open_database(url)
    try:
        matches = sorted(db.list_matches(created["tournament_id"], limit=None),
                         key=lambda m: m.started_at or m.created_at)
        assert [m.status.value for m in matches] == ["finished", "finished"]
        evil = [next(s.seat for s in m.seats if s.bot_name == "evil") for m in matches]
        probes = [parse_probes(next(log.output for log in db.seat_logs(m.id)
                                    if log.seat == seat))
                  for m, seat in zip(matches, evil, strict=True)]
        opponent = _opponent_hand(db.get_log(matches[1].id), evil[1])
        stored = db.get_tournament(created["tournament_id"])
    finally:
        db.close()
    assert matches[0].seed == matches[1].seed and evil[0] != evil[1]
    assert matches[0].finished_at and matches[1].started_at
    assert matches[0].finished_at <= matches[1].started_at  # the phases, across a worker
    _assert_nothing_carried(probes[0], probes[1], opponent)
    assert stored is not None and stored.config["defences"]["page_cache_reset"] is True


def test_a_run_does_not_claim_the_reset_while_another_process_plays_on_the_host(
        tmp_path: Path, arena: Arena) -> None:
    arena.leftovers()  # the session's scenarios have ended: this test holds the lock
    other = HostReset()
    assert other.claim() is None, "another cfarena process plays on this host"
    try:
        result = run_cli("run-tournament", "--bot", "random", "--bot", "greedy",
                         "--players", "2", "--games", "1", "--rule", "rounds=1",
                         "--db", f"sqlite:///{tmp_path / 'cfarena.db'}", cwd=tmp_path)
    finally:
        other.release()
    assert result.returncode == 0, result.stderr
    db = open_database(f"sqlite:///{tmp_path / 'cfarena.db'}")
    try:
        [tournament] = db.list_tournaments()
    finally:
        db.close()
    assert tournament.config["defences"]["page_cache_reset"] is False
    [line] = [x for x in result.stderr.splitlines() if "another cfarena process" in x]
    assert f"(pid {os.getpid()})" in line and "not claimed" in line, result.stderr


def test_a_bot_test_resets_the_host_between_its_phases(tmp_path: Path, arena: Arena) -> None:
    """`cfarena sprt` plays its deal groups' seatings in phases too: alone on the host,
    its stored tournament says the reset held (a failed drop would record it not held)."""
    arena.leftovers()  # the session's scenarios have ended: this test holds the lock
    result = run_cli("sprt", "random", "greedy", "--players", "2", "--rule", "rounds=1",
                     "--max-matches", "4", "--db", f"sqlite:///{tmp_path / 'cfarena.db'}",
                     cwd=tmp_path)
    assert result.returncode in (0, 1, 3), result.stderr  # a verdict or the cap
    assert "page cache" not in result.stderr and "Traceback" not in result.stderr
    db = open_database(f"sqlite:///{tmp_path / 'cfarena.db'}")
    try:
        [tournament] = db.list_tournaments()
        phases = set(match_phases(db, tournament.id).values())
    finally:
        db.close()
    assert len(phases) >= 2, phases  # there was a phase change to reset at
    assert tournament.config["defences"]["page_cache_reset"] is True
