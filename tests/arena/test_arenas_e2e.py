"""Two arenas on one PostgreSQL end to end: two real `cfarena serve` processes on one
database, dial-in bot processes (`python -m cfarena.sdk run`) each connected to both
with one comma-separated --server, one arena killed with SIGKILL mid-run. The other
goes on playing; the dead arena's matches in play end aborted (not finished, not
lost, their deals never played again); no match is stored twice; every rating row's
game count is its finished matches; no bot ever played more matches at once, across
both arenas, than its declared capacity (from the stored start and end times)."""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from cfarena.server.storage import open_database
from tests.cli.helpers import run_in_process
from tests.harness.postgres import PgCluster
from tests.harness.serve import Arena

PLAYERS = "3"
POOL = "standard/3p"
CAPACITY = 2
DEAD_AFTER_S = 3
ARENA_ID = re.compile(r"arena ([0-9a-f]{16})\); Ctrl-C")
BOTS = {"random": "cfarena.bots.random_bot", "greedy": "cfarena.bots.greedy",
        "smart": "cfarena.bots.smart", "montecarlo": "cfarena.bots.montecarlo"}
EACH = 12  # matches each arena plays before the kill, and b after it


class Fleet(Arena):
    """Both arenas and the bots, output in files, stopped by PID / process group."""

    def arena(self, name: str, *args: str) -> int:
        """Arena `name` (`cfarena serve` on port 0), listening: the port it bound."""
        return self.serve("--dead-after", str(DEAD_AFTER_S), *args, name=name).bots


@pytest.fixture
def fleet(tmp_path: Path, pg_cluster: PgCluster) -> Iterator[Fleet]:
    f = Fleet(tmp_path, pg_cluster.create_database("arenas_e2e"))
    try:
        yield f
    finally:
        f.close()


def _open_matches(db_url: str, arena_id: str) -> set[str]:
    with open_database(db_url, create=False) as db, db.engine.connect() as conn:
        return {str(m) for (m,) in conn.execute(text(
            "SELECT id FROM matches WHERE arena_id = :a AND status IN ('scheduled', "
            "'running')"), {"a": arena_id})}


def _peak(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals open at one instant (one ending as another starts: not both)."""
    at_once = peak = 0
    for _when, step in sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals]):
        at_once += step
        peak = max(peak, at_once)
    return peak


@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.long
def test_two_arenas_one_killed(fleet: Fleet) -> None:
    t0 = time.monotonic()
    tokens = {}
    for name in BOTS:
        added = run_in_process("bots", "add", name, "--db", fleet.db, cwd=fleet.dir)
        assert added.returncode == 0, added.stderr
        tokens[name] = added.stdout.strip().splitlines()[-1]
    ports = {name: fleet.arena(name, "--players", PLAYERS, "--rule", "rounds=single",
                               "--concurrency", "3") for name in ("a", "b")}
    ids = {n: ARENA_ID.findall(fleet.err(n))[0] for n in ports}
    servers = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    for name, module in BOTS.items():
        fleet.dial_in(name, module, servers, tokens[name], "--capacity", str(CAPACITY),
                      "--retries", "-1", "-q", env={"CFARENA_MC_BUDGET_MS": "2"})
    fleet.wait(f"{EACH} matches on each arena",
               lambda: min(len(fleet.finished(n)) for n in ports) >= EACH, 60, ("a", "b"))
    warm = time.monotonic() - t0

    # arena a is killed while it plays: frozen (SIGSTOP) until the database shows a
    # match of it in play, so that what is cut off is known exactly, then SIGKILLed
    a = fleet.procs["a"].pid
    deadline = time.monotonic() + 20
    while True:
        os.kill(a, signal.SIGSTOP)
        cut_off = _open_matches(fleet.db, ids["a"])
        if cut_off or time.monotonic() > deadline:
            break
        os.kill(a, signal.SIGCONT)
        time.sleep(0.05)
    os.kill(a, signal.SIGKILL)
    assert fleet.procs["a"].wait(10) == -signal.SIGKILL
    killed_at = time.monotonic()
    assert cut_off, "arena a had no match in play for 20 s"
    logged_a = fleet.finished("a")
    b_before = len(fleet.finished("b"))
    # b goes on (the bots' streams to a are gone) and aborts a's matches once a is stale
    fleet.wait("a's matches aborted by b", lambda: "of a dead arena marked aborted"
               in fleet.err("b"), 3 * DEAD_AFTER_S + 5, ("b",))
    reaped_after = time.monotonic() - killed_at
    fleet.wait(f"{EACH} more matches on arena b",
               lambda: len(fleet.finished("b")) >= b_before + EACH, 40, ("b",))
    played_on = time.monotonic() - t0
    fleet.procs["b"].send_signal(signal.SIGTERM)
    assert fleet.procs["b"].wait(30) == 0, fleet.err("b")
    for name in BOTS:
        fleet.procs[name].send_signal(signal.SIGTERM)
        assert fleet.procs[name].wait(20) == 0, fleet.err(name)
    assert "Traceback" not in fleet.err("b")
    logged_b = fleet.finished("b")

    with open_database(fleet.db, create=False) as db, db.engine.connect() as conn:
        matches = {str(i): (str(a), str(s), r, st, fin) for i, a, s, r, st, fin in conn.execute(
            text("SELECT id, arena_id, status, reason, started_at, finished_at FROM matches"))}
        seeds = [int(s) for (s,) in conn.execute(text("SELECT seed FROM matches"))]
        seats = conn.execute(text(
            "SELECT s.match_id, b.name, s.bot_version FROM match_seats s "
            "JOIN bots b ON b.id = s.bot_id")).all()
        skill = {(str(n), str(p)): int(g) for n, p, g in conn.execute(text(
            "SELECT b.name, r.pool, r.games FROM skill_ratings r JOIN bots b ON b.id = r.bot_id"))}
        elo = {(str(n), str(p)): int(g) for n, p, g in conn.execute(text(
            "SELECT b.name, r.pool, r.games FROM ratings r JOIN bots b ON b.id = r.bot_id"))}
        history = conn.execute(text(
            "SELECT match_id, count(*) FROM rating_history GROUP BY match_id")).all()
        arenas = {str(i): (stopped, beat) for i, stopped, beat in conn.execute(
            text("SELECT id, stopped_at, heartbeat_at FROM arenas"))}

    # the killed arena's row is not left live: b marked it stopped at its last heartbeat
    # (b's own row: stopped by its clean stop, after its last beat)
    assert arenas[ids["a"]][0] is not None and arenas[ids["a"]][0] == arenas[ids["a"]][1]
    assert arenas[ids["b"]][0] is not None and arenas[ids["b"]][0] >= arenas[ids["b"]][1]
    # both arenas played; every match is stored once, by the arena that played it
    assert len(logged_a) >= EACH and len(logged_b) >= b_before + EACH
    assert not set(logged_a) & set(logged_b)
    assert len(logged_a) == len(set(logged_a)) and len(logged_b) == len(set(logged_b))
    finished = {k for k, m in matches.items() if m[1] == "finished"}
    # (a match a logged just before the kill, but had not stored yet, is cut off too)
    assert finished == (set(logged_a) - cut_off) | set(logged_b)
    assert {matches[k][0] for k in logged_a} == {ids["a"]}
    assert {matches[k][0] for k in logged_b} == {ids["b"]}
    assert len(seeds) == len(set(seeds))  # no deal twice
    # nothing is left unfinished; a's matches in play were aborted, naming a
    assert {m[1] for m in matches.values()} <= {"finished", "aborted"}
    assert cut_off and all(matches[k][1] == "aborted" for k in cut_off)
    assert all(f"arena {ids['a']} (127.0.0.1:{ports['a']}) died" in str(matches[k][2])
               for k in cut_off), [matches[k][2] for k in cut_off]
    # rated once: each rating row's games are the finished matches it played in
    played = Counter(str(name) for m, name, _v in seats if m in finished)
    for pool in (POOL, "global"):
        assert {n: g for (n, p), g in skill.items() if p == pool} == dict(played)
        assert {n: g for (n, p), g in elo.items() if p == pool} == dict(played)
    assert {str(m) for m, _ in history} == finished
    assert all(int(n) == 2 * int(PLAYERS) for _, n in history)
    # never above capacity across the arenas; both arenas shared each bot's slots
    spans: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    arenas_of: dict[str, set[str]] = defaultdict(set)
    for m, name, _v in seats:
        _arena, _status, _reason, started, ended = matches[str(m)]
        if started is not None:
            spans[str(name)].append((started, ended))
            arenas_of[str(name)].add(_arena)
    peaks = {n: _peak(s) for n, s in spans.items()}
    assert max(peaks.values()) == CAPACITY, peaks
    assert all(a == {ids["a"], ids["b"]} for a in arenas_of.values())
    elapsed = time.monotonic() - t0
    print(f"\n{len(logged_a)} matches on a before SIGKILL, {len(logged_b)} on b; "
          f"{len(cut_off)} cut off and aborted {reaped_after:.1f} s after the kill; "
          f"peak matches at once per bot {peaks}; {EACH} each after {warm:.0f} s, b's "
          f"{EACH} more after {played_on:.0f} s, {elapsed:.0f} s in all")
