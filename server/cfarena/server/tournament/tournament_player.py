"""What a machine needs to play one tournament's matches: its bots' warm processes, a
writer to storage and a room; and the tournament's definition read back from storage.

`TournamentPlayer.play` is everything after "take a match": fresh sandboxed processes
for its seats, the match played from its seed, stored and rated (one transaction,
`Database.record_match`). The local run (`match_queue.play_all`, SQLite) and the queue
workers (`worker`, PostgreSQL) both play through it; a queue worker also waits for the
store (`acknowledge`) before it acknowledges the match's job. Before it plays a match
of a later phase (`schedule.phases`) than before, `enter_phase` stops every bot
process and drops the host's caches (`sandbox.host_reset`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfarena.bots import settings_problem
from cfarena.engine import Rules
from cfarena.server.referee import MatchRecord, RefereeServer, TimeControl
from cfarena.server.sandbox import SandboxLimits
from cfarena.server.sandbox.host_reset import HostReset, HostResetError
from cfarena.server.storage import (
    Database,
    LeaseLost,
    ScheduledMatch,
    StorageError,
    StoredMatch,
)
from cfarena.server.storage.match_writer import MatchWriter, StoreOutcome
from cfarena.server.tournament.config import (
    BotSpec,
    TournamentConfig,
    TournamentError,
    host_defences,
    stored_settings,
)
from cfarena.server.tournament.match_room import MatchRoom, write_seat_log
from cfarena.server.tournament.pool import BotPool, Launch, needed_processes
from cfarena.server.tournament.schedule import seats_needed
from cfarena.server.tournament.start_failures import BotStartError
from cfarena.server.tournament.stored_tournament import match_phases

log = logging.getLogger("cfarena.tournament")


@dataclass
class TournamentPlayer:
    """One tournament's bots on this machine, and where their matches are played."""

    server: RefereeServer
    db: Database
    config: TournamentConfig
    launch: Launch
    concurrency: int
    log_dir: Path | None = None
    acknowledge: bool = False  # wait for each match to be stored (queue workers)
    pool: BotPool | None = None
    writer: MatchWriter | None = None
    room: MatchRoom | None = None
    names: dict[int, str] = field(default_factory=dict)  # bot id -> name
    store_s: float = 0.0  # time waited for matches to be stored (with `acknowledge`)
    host: HostReset | None = None  # drops the host's caches (unless it `cannot`)
    phase: int | None = None  # the phase of the matches played now (None: none yet)
    phases: dict[str, int] = field(default_factory=dict)  # match key -> its phase
    # the players of the other tournaments this process plays (a worker's): their
    # processes not in a match are stopped at this one's phase change too
    neighbours: Callable[[], Sequence[TournamentPlayer]] = lambda: ()
    reset_held: bool = True  # no phase change so far found the reset defeated
    seated: set[str] = field(default_factory=set)  # keys of the matches the pool counts
    _phase_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def start(self, seatings: Sequence[Sequence[str]],
                    phases: Sequence[int] | None = None, keys: Sequence[str] = ()) -> None:
        """Start the bots' processes ahead of need (`seatings`: the matches to come;
        `phases`: the phase of each, if known, which bounds what is started ahead to
        what each phase can use; `keys`: their keys, which `schedule` then skips);
        TournamentError if a bot does not start or connect (with `log_dir`, what its
        last process printed is written there, as start-BOT.log)."""
        config = self.config
        self.seated.update(keys)
        need = seats_needed(seatings)
        self.pool = BotPool(
            self.server, self.launch, {b.name: b.command for b in config.bots},
            settings={b.name: dict(b.settings) for b in config.bots if b.settings},
            warm={b.name: need.get(b.name, 1) * self.concurrency for b in config.bots},
            demand=needed_processes([list(s) for s in seatings]),
            phase_seats=None if phases is None else seats_by_phase(seatings, phases),
        )
        try:
            await self.pool.start()
        except BotStartError as exc:
            if self.log_dir is not None and exc.bot:
                # no match to store it with: what it printed is kept here
                write_seat_log(self.log_dir / f"start-{exc.bot}.log", exc.output)
            raise TournamentError(str(exc)) from None
        self.writer = MatchWriter(self.db, log.warning, acknowledge=self.acknowledge)
        self.writer.start()

    def attach(self, tournament_id: int, names: dict[int, str],
               phases: dict[str, int] | None = None) -> None:
        """Play for tournament `tournament_id` (whose bots have these ids; `phases`: its
        `match_phases` if the caller read them already)."""
        assert self.pool is not None and self.writer is not None, "start() first"
        self.names = names
        self.room = MatchRoom(self.server, self.pool, self.writer, self.config.time_control,
                              tournament_id, self.log_dir)
        self.phases = match_phases(self.db, tournament_id) if phases is None else phases
        self._record_defences()

    def schedule(self, matches: Sequence[ScheduledMatch]) -> None:
        """Those of `matches` (of a batch scheduled since `start`, their phases in
        `phases`) that the pool does not count yet are added to what it needs and to
        what their phases can use (`BotPool.schedule`)."""
        assert self.pool is not None, "start() first"
        new = [m for m in matches if m.key not in self.seated]
        if not new:
            return
        self.pool.schedule(seats_by_phase(
            [[self.names[i] for i in m.seat_bot_ids] for m in new],
            [self.phases.get(m.key, 0) for m in new]))
        self.seated.update(m.key for m in new)

    async def enter_phase(self, phase: int, *, earlier: bool = False) -> None:
        """Play matches of `phase` from now on. Entering a later phase than so far (or,
        first, any phase after the first: the earlier ones were played before) stops
        every bot process and drops the host's caches: no process of a bot that may
        have learnt one view of a deal lives on, nor what it left in the host's caches.
        The caller sees to it that no match of an earlier phase is still playing.
        With `earlier`, a phase before the current one is entered so too: a match of it
        played again after later phases (one the referee's stalls voided: the later
        phases played its deal's other rotations); the caller sees to it that no match
        at all is playing.

        The other tournaments this process plays (`neighbours`) have their processes
        not in a match stopped too; if one has a match in play, or another cfarena
        process plays on this host (`HostReset.shared`), the reset does not hold for
        this tournament and its stored defences say so."""
        async with self._phase_lock:
            first = self.phase is None
            if self.phase is not None and phase <= self.phase and not (
                    earlier and phase < self.phase):
                return
            self.phase = phase
            assert self.pool is not None, "start() first"
            self.pool.enter_phase(phase)
            if first and phase == 0:
                return
            await self.pool.new_phase()
            others = [p.pool for p in self.neighbours() if p is not self and p.pool is not None]
            await asyncio.gather(*(pool.new_phase(keep_playing=True) for pool in others))
            if self.host is not None and self.host.cannot is None:
                why = self._reset_defeated(others)
                try:
                    await asyncio.to_thread(self.host.drop)
                except HostResetError as exc:
                    log.warning("%s; the host reset does not hold for this tournament", exc)
                    self.host = None
                    await asyncio.to_thread(self._record_defences)
                why = why or self._reset_defeated(others)
                if why is not None and self.reset_held:
                    log.warning("tournament %s: %s; the host reset does not hold for it",
                                self.room.tournament_id if self.room else "?", why)
                    self.reset_held = False
                    await asyncio.to_thread(self._record_defences)
            await self.pool.restart()
            for pool in others:
                await pool.restart()

    def _reset_defeated(self, others: Sequence[BotPool]) -> str | None:
        """Why a drop now would not reset the host for this tournament, or None."""
        if any(pool.playing() for pool in others):
            return "another tournament of this worker has a match in play at its phase change"
        if self.host is not None and self.host.sole and self.host.shared():
            # (one that never held the lock said so when it started)
            return "another cfarena process plays tournaments on this host"
        return None

    def _record_defences(self) -> None:
        """Record in the stored tournament the defences this machine does not give."""
        if self.room is None:
            return
        held = host_defences(self.launch)
        held["page_cache_reset"] = held["page_cache_reset"] and self.host is not None \
            and self.host.sole and self.reset_held
        try:
            self.db.weaken_tournament_defences(self.room.tournament_id, held)
        except StorageError as exc:
            log.warning("cannot record the defences of tournament %s: %s",
                        self.room.tournament_id, exc)

    async def play(self, match: ScheduledMatch) -> MatchRecord:
        """Play `match` and hand it to storage; with `acknowledge`, return once it is
        stored (StorageError if the database refused it, `LeaseLost` if this copy was
        dropped because the match's lease was taken from this process)."""
        assert self.room is not None and self.writer is not None, "attach() first"
        record = await self.room.play(match, [self.names[i] for i in match.seat_bot_ids])
        if self.acknowledge:
            started = time.perf_counter()
            outcome = await self.writer.settled(match.id)
            self.store_s += time.perf_counter() - started
            if outcome is StoreOutcome.LEASE_LOST:
                raise LeaseLost(f"match {match.id}: its lease was taken from this worker")
            if outcome is StoreOutcome.REFUSED:
                raise StorageError(f"match {match.id} could not be stored")
        return record

    async def close(self, flush_timeout: float) -> list[StoredMatch]:
        """Store what is queued (for up to `flush_timeout` s), then stop the processes;
        the records left unstored."""
        left: list[StoredMatch] = []
        if self.writer is not None:
            left = await self.writer.close(flush_timeout)
            self.writer = None
        if self.pool is not None:
            await self.pool.close()
            self.pool = None
        return left


def seats_by_phase(seatings: Sequence[Sequence[str]], phases: Sequence[int]
                   ) -> dict[int, dict[str, int]]:
    """Phase -> bot -> the seats it holds in the phase's matches (`seatings`, whose
    phases are `phases`)."""
    found: dict[int, dict[str, int]] = {}
    for seats, phase in zip(seatings, phases, strict=True):
        held = found.setdefault(phase, {})
        for name in seats:
            held[name] = held.get(name, 0) + 1
    return found


def stored_config(stored: dict[str, Any]) -> tuple[TournamentConfig, Launch]:
    """The tournament (and how its bots are started) as `open_tournament` stored it: what
    a worker on another machine plays. The bot commands must exist on that machine."""
    try:
        bots = tuple(
            BotSpec(b["name"], None if str(b["command"]) == f"bundled:{b['name']}"
                    else str(b["command"]), tuple(sorted(dict(b.get("files") or {}).items())),
                    stored_settings(b.get("settings")))
            for b in stored["bots"])
        for bot in bots:  # values a bundled bot would refuse: said here, not at its start
            problem = settings_problem(bot.name, dict(bot.settings))
            if problem is not None:
                raise ValueError(f"bot {bot.name}: {problem}")
        tc = stored["time_control"]
        config = TournamentConfig(
            bots=bots, rules=Rules.from_options(stored["rules"]),
            players=int(stored["players"]), games=int(stored["games"]),
            seed=stored.get("seed") if stored.get("seed_fixed") else None,
            time_control=TimeControl(tc["move_timeout_ms"], tc["bank_ms"],
                                     tc["increment_ms"], tc["strikes"]),
            fill=int(stored.get("seats_per_bot", 1)) > 1,
            gauntlet=None if stored.get("gauntlet") is None else str(stored["gauntlet"]),
        )
        sandbox = stored.get("sandbox")
        launch = Launch(sandbox=False) if sandbox is None else Launch(
            sandbox=True, limits=SandboxLimits(memory_mib=int(sandbox["memory_mib"]),
                                               cpu_seconds=int(sandbox["cpu_seconds"]),
                                               processes=int(sandbox["processes"]),
                                               files=int(sandbox.get("files",
                                                                     SandboxLimits().files))))
    except (KeyError, TypeError, ValueError) as exc:
        raise TournamentError(f"the stored tournament cannot be read: {exc}") from None
    return config, launch
