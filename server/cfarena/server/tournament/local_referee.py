"""Where one command's matches are played on this machine (`run-tournament`, `sprt`),
and how a player's matches are stored at the end: one step for every command.

`LocalReferee` is the command's own referee on a Unix socket in a private directory
(SQLite), or one local worker of the database's job queue (PostgreSQL), which has
its referee; and what drops the host's caches. `close_player` stores what a
`TournamentPlayer` played (waiting for the database a while), stops its processes,
and puts the records the database did not take in a file.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cfarena.server.referee import RefereeServer, TokenRegistry
from cfarena.server.sandbox.host_reset import HostReset, claim_host_reset
from cfarena.server.storage import Database
from cfarena.server.storage.match_writer import dump_unsaved
from cfarena.server.tournament.job_queue import install_schema, uses_queue
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.tournament_player import TournamentPlayer

if TYPE_CHECKING:  # the queue's worker (and procrastinate) load only on PostgreSQL
    from cfarena.server.tournament.worker import QueueWorker

FLUSH_TIMEOUT_S = 60.0  # at the end, how long played matches may wait for the database


@dataclass
class LocalReferee:
    """Where this run's matches are played: its own referee on a Unix socket in a
    private directory (SQLite), or one local worker of the database's job queue
    (PostgreSQL), which has its referee; and what drops the host's caches."""

    db: Database
    launch: Launch
    concurrency: int
    log_dir: Path | None
    worker: QueueWorker | None = None
    host: HostReset | None = None  # the local run's (a worker releases its own)
    _server: RefereeServer | None = None
    _socket_dir: Path | None = None

    async def start(self) -> RefereeServer:
        if uses_queue(self.db.engine):
            install_schema(self.db.engine)
            from cfarena.server.tournament.worker import QueueWorker, WorkerOptions

            self.worker = QueueWorker(self.db, WorkerOptions(
                concurrency=self.concurrency, binds=self.launch.binds,
                connect_timeout=self.launch.connect_timeout, log_dir=self.log_dir))
            return await self.worker.start()
        self._socket_dir = Path(tempfile.mkdtemp(prefix="cfarena-referee-"))  # 0700
        self._server = RefereeServer(TokenRegistry(), port=None,
                                     unix_socket=self._socket_dir / "arena.sock")
        await self._server.start()
        return self._server

    def host_reset(self) -> HostReset | None:
        """What drops this host's caches between phases and holds the host's players'
        lock (the worker's, if there is one); where the caches cannot be dropped here it
        holds the lock only (`HostReset.cannot`)."""
        if self.worker is not None:
            return self.worker.host
        self.host = claim_host_reset()  # released when the run ends
        return self.host

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.close()
            return
        if self._server is not None:
            await self._server.stop(grace=0.5)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
        if self.host is not None:
            self.host.release()


async def close_player(player: TournamentPlayer | None, of: str = "") -> str | None:
    """Store what `player` played (for up to `FLUSH_TIMEOUT_S`), then stop its
    processes; None when everything is stored, else the line saying how many finished
    matches (`of`: " of tournament 3") the database did not take and where they are."""
    left = await player.close(FLUSH_TIMEOUT_S) if player is not None else []
    if not left:
        return None
    where = dump_unsaved(left, Path.cwd())
    return (f"{len(left)} finished match(es){of} could not be stored (the database is "
            f"away); they are in {where}")
