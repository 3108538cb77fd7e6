"""An arena frozen past the stale limit stores nothing of the match it lost: two real
`cfarena serve` processes on one PostgreSQL, dial-in bots on the first, which is frozen
(SIGSTOP) while it plays a match until the second marks that match aborted (the first
is stale), then woken (SIGCONT). The match's lease was revoked with the abort: the
woken arena's copy (its seats charged for the freeze) is refused, the match stays
aborted and unrated, and the woken arena says in one line that it lost the match,
stops it and plays on with new matches, with no traceback."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from cfarena.server.storage import open_database
from tests.arena.test_arenas_e2e import ARENA_ID, DEAD_AFTER_S, Fleet
from tests.cli.helpers import run_in_process
from tests.harness.postgres import PgCluster
from tests.harness.serve import FINISHED, lost

BOTS = {"greedy": "cfarena.bots.greedy", "smart": "cfarena.bots.smart"}


@pytest.fixture
def fleet(tmp_path: Path, pg_cluster: PgCluster) -> Iterator[Fleet]:
    f = Fleet(tmp_path, pg_cluster.create_database("arena_fencing"))
    try:
        yield f
    finally:
        f.close()


def _running(fleet: Fleet, arena_id: str) -> list[str]:
    with open_database(fleet.db, create=False) as db, db.engine.connect() as conn:
        return [str(m) for (m,) in conn.execute(text(
            "SELECT id FROM matches WHERE arena_id = :a AND status = 'running'"),
            {"a": arena_id})]


def _in_a_transaction(fleet: Fleet) -> bool:
    """Whether another session of the database is inside a transaction: an arena frozen
    in one would hold its rows locked for the whole freeze, and the other arena's abort
    would wait for them (a freeze of the arena's storage, not of its match)."""
    with open_database(fleet.db, create=False) as db, db.engine.connect() as conn:
        return bool(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'")).scalar())


def _stored(fleet: Fleet, match_id: str) -> tuple[str, str, int, int, int]:
    """A match's status and reason, and how many game logs, faults and rating rows."""
    with open_database(fleet.db, create=False) as db, db.engine.connect() as conn:
        status, reason = conn.execute(text("SELECT status, reason FROM matches WHERE id = :m"),
                                      {"m": match_id}).one()
        rows = [conn.execute(text(f"SELECT count(*) FROM {table} WHERE match_id = :m"),
                             {"m": match_id}).scalar_one()
                for table in ("game_logs", "faults", "rating_history")]
    return str(status), str(reason), *rows  # type: ignore[return-value]


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_an_arena_frozen_past_the_stale_limit_stores_nothing(fleet: Fleet) -> None:
    tokens = {}
    for name in BOTS:
        added = run_in_process("bots", "add", name, "--db", fleet.db, cwd=fleet.dir)
        assert added.returncode == 0, added.stderr
        tokens[name] = added.stdout.strip().splitlines()[-1]
    ports = {name: fleet.arena(name, "--players", "2", "--rule", "rounds=3",
                               "--concurrency", "1") for name in ("a", "b")}
    ids = {n: ARENA_ID.findall(fleet.err(n))[0] for n in ports}
    for name, module in BOTS.items():  # they play on arena a only
        fleet.dial_in(name, module, f"127.0.0.1:{ports['a']}", tokens[name], "--retries",
                      "-1", "-q")

    # a is frozen while a match of it is in play
    deadline = time.monotonic() + 30
    while True:
        fleet.procs["a"].send_signal(signal.SIGSTOP)
        held = _running(fleet, ids["a"])
        if held and not _in_a_transaction(fleet):
            break
        fleet.procs["a"].send_signal(signal.SIGCONT)
        assert time.monotonic() < deadline, "arena a had no match in play for 30 s"
        time.sleep(0.05)
    match_id = held[0]
    try:
        fleet.wait("b to abort a's match", lambda: match_id in fleet.err("b"),
                   3 * DEAD_AFTER_S + 5, ("b",))
        assert _stored(fleet, match_id)[0] == "aborted"
    finally:
        fleet.procs["a"].send_signal(signal.SIGCONT)
    # a wakes: it learns it lost the match (its next beat, or its refused store), and
    # plays on with a new match
    said_lost = lost(match_id)
    fleet.wait("a to notice it lost the match", lambda: bool(said_lost.search(fleet.err("a")))
               or _stored(fleet, match_id)[0] != "aborted", 15, ("a", "b"))
    woke = len(fleet.err("a"))
    fleet.wait("a new match on a", lambda: bool(FINISHED.search(fleet.err("a")[woke:])),
               30, ("a", "b"))
    for name in ("a", "b", *BOTS):
        fleet.procs[name].send_signal(signal.SIGTERM)
    for name in ("a", "b", *BOTS):
        assert fleet.procs[name].wait(30) == 0, fleet.err(name)[-3000:]

    status, reason, logs, faults, rated = _stored(fleet, match_id)
    assert (status, logs, faults, rated) == ("aborted", 0, 0, 0), fleet.err("a")[-3000:]
    assert f"arena {ids['a']} (127.0.0.1:{ports['a']}) died" in reason
    err_a = fleet.err("a")
    assert said_lost.search(err_a), err_a[-3000:]
    assert "Traceback" not in err_a + fleet.err("b")
    # rated: exactly the finished matches
    with open_database(fleet.db, create=False) as db, db.engine.connect() as conn:
        finished = conn.execute(text(
            "SELECT count(*) FROM matches WHERE status = 'finished'")).scalar_one()
        games = {str(n): int(g) for n, g in conn.execute(text(
            "SELECT b.name, r.games FROM skill_ratings r JOIN bots b ON b.id = r.bot_id "
            "WHERE r.pool = 'global'"))}
    assert finished >= 1 and games == {name: finished for name in BOTS}
