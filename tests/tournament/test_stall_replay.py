"""A match the referee's own stall voided is played again (tournament/match_room.py): the
tournament's stored results are those of an undisturbed run. A real referee and real
bot processes (unsandboxed), a real SQLite file; the referee's loop is blocked while a
seat's process is killed, as a bot whose keepalive gave up on a frozen referee ends."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.match.record import TimeControl
from cfarena.server.credentials import hash_token
from cfarena.server.referee import RefereeServer
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.tokens import SeatPass
from cfarena.server.storage import open_database
from cfarena.server.tournament import BotSpec, TournamentConfig, run_tournament
from cfarena.server.tournament.pool import Launch
from cfarena.v1 import arena_pb2 as pb
from tests.harness.host_processes import pids_where

CONFIG = TournamentConfig(bots=(BotSpec("greedy"), BotSpec("smart")),
                          rules=Rules.preset("standard").with_options(rounds=1), players=2,
                          games=1, seed=5, time_control=TimeControl(move_timeout_ms=2000))


def _results(db: Path) -> dict[str, tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "select m.key, m.status, m.totals, m.ranks, "
            "(select count(*) from faults f where f.match_id = m.id) from matches m")
        return {key: tuple(rest) for key, *rest in rows}


def _kill_process_of(seat_pass: SeatPass) -> bool:
    """SIGKILL the bot process that connected with `seat_pass` (found by its token)."""
    def holds_the_pass(entry: Path) -> bool:
        return any(var.startswith(b"CFARENA_TOKEN=")
                   and hash_token(var.split(b"=", 1)[1].decode()) == seat_pass.token_hash
                   for var in (entry / "environ").read_bytes().split(b"\0"))

    for pid in pids_where(holds_the_pass):
        os.kill(pid, signal.SIGKILL)
        return True
    return False


def _play(db: Path, disturb: bool) -> list[str]:
    """Run CONFIG on `db`; with `disturb`, the first match's seat 0 is killed at its third
    Turn while the referee's loop is blocked for 1.5 s. What was killed."""
    killed: list[str] = []

    def on_server(server: RefereeServer) -> None:
        if not disturb:
            return
        turns = 0

        def on_send(name: str, match_id: str, seat: int, data: bytes) -> None:
            nonlocal turns
            if seat != 0 or pb.RefereeMessage.FromString(data).WhichOneof("kind") != "turn":
                return
            turns += 1
            if turns == 3:
                conn = next(c for c in server.connections() if c.matches.get(match_id) == 0)
                asyncio.get_running_loop().call_later(0.01, stall, conn)

        def stall(conn: BotConnection) -> None:
            assert conn.seat_pass is not None
            if _kill_process_of(conn.seat_pass):
                killed.append(conn.bot_name)
            time.sleep(1.5)

        server.on_send = on_send

    async def main() -> None:
        with open_database(f"sqlite:///{db}") as store:
            run = await run_tournament(CONFIG, store, concurrency=1, on_server=on_server,
                                       launch=Launch(sandbox=False))
            assert run.status == "finished"

    asyncio.run(main())
    return killed


def test_a_match_voided_by_a_referee_stall_is_played_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _play(tmp_path / "undisturbed.db", disturb=False)
    with caplog.at_level(logging.WARNING, logger="cfarena.tournament"):
        killed = _play(tmp_path / "disturbed.db", disturb=True)
    assert len(killed) == 1
    undisturbed = _results(tmp_path / "undisturbed.db")
    assert len(undisturbed) == 2 and all(r[0] == "finished" and r[3] == 0
                                         for r in undisturbed.values())
    assert _results(tmp_path / "disturbed.db") == undisturbed
    assert "the referee stalled" in caplog.text and "playing it again" in caplog.text
