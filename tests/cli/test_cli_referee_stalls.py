"""The referee's own stalls are never a bot's fault (`run-tournament` as a real process,
on a real SQLite file, deterministic bots): a database held locked by another process,
and the referee's process frozen with SIGSTOP, each for longer than a move's deadline,
leave the stored results exactly those of an undisturbed run with the same seed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .helpers import CFARENA

# a second a move: the undisturbed reference run must have no timeout at all, and on a
# loaded machine (the suite on four workers, ci22) a bot process waited past 400 ms
TIMEOUT_MS = 1000
STALL_S = 2.5  # each stall: two and a half times a move's deadline
STALLS = 3  # (whether a stall catches a bot deciding depends on timing: 3 nearly always do)
# greedy and smart decide from what they see alone: a match is a function of its seed
ARGS = ["run-tournament", "--bot", "greedy", "--bot", "smart", "--players", "2",
        "--games", "6", "--rule", "rounds=2", "--timeout-ms", str(TIMEOUT_MS),
        "--concurrency", "2", "--seed", "11", "--no-sandbox", "--json"]

Results = dict[str, tuple[object, ...]]


def _results(db: Path) -> Results:
    """Match key -> (status, totals, ranks, faults, forfeits) of every stored match."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "select m.key, m.status, m.totals, m.ranks, "
            "(select count(*) from faults f where f.match_id = m.id), "
            "(select count(*) from match_seats s where s.match_id = m.id and s.forfeited) "
            "from matches m").fetchall()
    return {key: (status, totals, ranks, faults, forfeits)
            for key, status, totals, ranks, faults, forfeits in rows}


def _count(db: Path, status: str) -> int:
    try:
        with sqlite3.connect(db, timeout=0.1) as conn:
            return int(conn.execute(
                "select count(*) from matches where status = ?", (status,)).fetchone()[0])
    except sqlite3.OperationalError:  # no schema yet, or locked
        return 0


def _one_in_play(db: Path, proc: subprocess.Popen[str], stored: int) -> int:
    """Wait until `stored` matches are stored and one is in play (the other slot is about
    to start the next: its start then falls in the stall, while a bot decides); how many
    are stored. Each stall waits for a match stored since the last one: three stalls
    are three chances, not one long stall with two blinks in it."""
    deadline = time.monotonic() + 120
    while (done := _count(db, "finished")) < stored or _count(db, "running") != 1:
        assert proc.poll() is None and time.monotonic() < deadline, \
            proc.communicate()[1][-3000:]
        time.sleep(0.01)
    return done


def _run(db: Path, disturb: Callable[[subprocess.Popen[str]], None] | None = None
         ) -> tuple[dict[str, object], str]:
    """One run of ARGS on `db`, `disturb`ed while it plays; (its JSON, its stderr)."""
    proc = subprocess.Popen([CFARENA, *ARGS, "--db", f"sqlite:///{db}"], cwd=db.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        if disturb is not None:
            disturb(proc)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    data: dict[str, object] = json.loads(out)
    return data, err


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Results]:
    db = tmp_path_factory.mktemp("undisturbed") / "cfarena.db"
    data, _err = _run(db)
    results = _results(db)
    assert data["status"] == "finished" and len(results) == 12
    # the reference itself is clean: every match finished, nobody faulted
    assert all(r[0] == "finished" and r[3] == 0 and r[4] == 0 for r in results.values())
    yield results


def test_a_database_locked_by_another_process_delays_storage_not_a_deadline(
        tmp_path: Path, undisturbed: Results) -> None:
    db = tmp_path / "cfarena.db"
    held = []

    def lock(proc: subprocess.Popen[str]) -> None:
        holder = sqlite3.connect(db, isolation_level=None, timeout=30)
        try:
            done = 1
            for _ in range(STALLS):
                done = _one_in_play(db, proc, done + 1)
                holder.execute("BEGIN IMMEDIATE")  # the write lock: every writer waits
                started = time.monotonic()
                time.sleep(STALL_S)
                holder.execute("COMMIT")
                held.append(time.monotonic() - started)
        finally:
            holder.close()

    data, _err = _run(db, lock)
    assert data["status"] == "finished" and min(held) >= STALL_S
    assert _results(db) == undisturbed


def test_a_referee_frozen_past_a_deadline_charges_no_bot(
        tmp_path: Path, undisturbed: Results) -> None:
    db = tmp_path / "cfarena.db"

    def freeze(proc: subprocess.Popen[str]) -> None:
        done = 1
        for _ in range(STALLS):  # the referee's process alone: its bots play on
            done = _one_in_play(db, proc, done + 1)
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(STALL_S)
            os.kill(proc.pid, signal.SIGCONT)

    data, _err = _run(db, freeze)
    assert data["status"] == "finished"
    assert _results(db) == undisturbed
