"""A tournament's lock: exclusive between processes, freed when its holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cfarena.server.storage import open_database
from cfarena.server.storage.locks import TournamentBusy, tournament_lock

HOLD = """
import sys, time
from cfarena.server.storage import open_database
from cfarena.server.storage.locks import tournament_lock
db = open_database(sys.argv[1])
with tournament_lock(db.engine, int(sys.argv[2])):
    print("held", flush=True)
    time.sleep(600)
"""


def _holder(url: str, tournament_id: int, *wrap: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([*wrap, sys.executable, "-c", HOLD, url, str(tournament_id)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_another_process_holding_it_refuses_until_it_dies(db_url: str) -> None:
    with open_database(db_url) as db:
        holder = _holder(db_url, 5)
        try:
            with pytest.raises(TournamentBusy, match="tournament 5 is being played"), \
                    tournament_lock(db.engine, 5):
                pass
            with tournament_lock(db.engine, 6):  # another tournament is free
                pass
        finally:
            os.killpg(holder.pid, signal.SIGKILL)  # kill -9: no chance to unlock
            holder.wait()
        # freed by the system with its holder: at once on SQLite (fcntl locks go with
        # the process); on PostgreSQL once the server has seen the connection close
        # and its backend has exited, a moment later
        deadline = time.monotonic() + 10
        while True:
            try:
                with tournament_lock(db.engine, 5):
                    break
            except TournamentBusy:
                assert time.monotonic() < deadline, "the dead holder's lock was not freed"
                time.sleep(0.05)


def test_a_sqlite_lock_leaves_no_file_and_is_held_once(tmp_path: Path) -> None:
    """No `<database>.locks` (or any other file) is left beside the database, and one
    process holding the lock refuses itself a second time (as PostgreSQL does)."""
    with open_database(f"sqlite:///{tmp_path / 'cfarena.db'}") as db:
        before = set(os.listdir(tmp_path))
        with tournament_lock(db.engine, 3), pytest.raises(TournamentBusy), \
                tournament_lock(db.engine, 3):
            pass
        with tournament_lock(db.engine, 3):
            assert set(os.listdir(tmp_path)) == before
    assert os.listdir(tmp_path) == ["cfarena.db"]


def test_a_sqlite_lock_holds_across_network_namespaces(tmp_path: Path) -> None:
    """Two runs in different network namespaces (containers on one volume, systemd's
    PrivateNetwork=) still exclude each other: the lock is on the database file."""
    url = f"sqlite:///{tmp_path / 'cfarena.db'}"
    with open_database(url) as db:
        holder = _holder(url, 4, "unshare", "--net")
        try:
            with pytest.raises(TournamentBusy), tournament_lock(db.engine, 4):
                pass
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait()
        with tournament_lock(db.engine, 4):
            pass


@pytest.mark.postgres
def test_a_postgres_lock_is_released_with_the_block(pg_url: str) -> None:
    """On PostgreSQL a second connection of the same process is refused too, and the lock
    goes when the block ends (the connection is dropped, not pooled with its session)."""
    with open_database(pg_url) as first, open_database(pg_url) as second:
        with tournament_lock(first.engine, 9), pytest.raises(TournamentBusy), \
                tournament_lock(second.engine, 9):
            pass
        with tournament_lock(second.engine, 9):
            pass
