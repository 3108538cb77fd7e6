"""The competition arena: the asyncio loop around the referee that `cfarena serve` runs.

Nothing a bot or a fault does stops it or loses a match:

- tables come from the ladder (`ladder.pick_table`) among the connected entrants
  (bot, version) with free capacity; their connections are reserved at once,
  then the match is scheduled in the database (a table that cannot be seated or
  scheduled is not started, and picked again later);
- finished matches, with their rating updates, are stored by a `MatchWriter` (in a
  worker thread, in order, retrying while the database is away), never on the
  event loop; so is every other database call (the poll below);
- every `poll_s` (1 s) the database is polled, in a worker thread, for the bots
  (new ones, rotated and revoked tokens: the live connections of a token that is
  gone are closed with UNAUTHENTICATED) and the pool's ratings and seat counts,
  which the ladder reads;
- each match's seed is fresh from the OS CSPRNG (62 bits, never repeated in a run);
- SIGINT/SIGTERM: running matches get 5 s, then are stored as aborted; every bot
  stream is ended with the shutdown status; what could not be stored within 10 s
  is written to `cfarena-unsaved-<timestamp>.jsonl` in the working directory;
- on start, matches outside any tournament left `running` by a referee that was
  killed are marked aborted (`AbortReason.REFEREE_STOPPED`);
- `pause()` (the web API's admin action) starts no new table until `resume()`;
  running matches play on.

Several arenas may share one database (docs/ARENA.md, "Running on several
machines"): each has an id and beats in the database on every poll; a live arena
marks the unfinished matches of one not heard of for `stale_s` aborted (the reason
names it; their deals are never played again) and revokes their leases. An arena
plays each match under the lease `mark_running` gave it: one that was only frozen
past `stale_s` stores nothing of the matches it lost (`storage.LeaseLost`, one line
each), and its first beat after waking tells it which they are: it says so in one
line, stops them (nothing of them is stored) and plays on with new tables, beating
as a live arena again; a bot's capacity holds across the
arenas (`Database.schedule_seated` refuses a table whose bot has no slot left on
any of them, and the poll tells each arena how busy each bot is on the others);
games, seat counts and ratings are read from the database, so they are shared.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cfarena.match.abort_reason import AbortReason
from cfarena.match.record import MatchRecord
from cfarena.server.arena.config import ArenaConfig
from cfarena.server.arena.ladder import Entrant, pick_table
from cfarena.server.arena.tokens import LiveTokens
from cfarena.server.backoff import Backoff
from cfarena.server.rating.online import Skill
from cfarena.server.referee import RefereeServer, ShuttingDown
from cfarena.server.referee.connection import BotConnection
from cfarena.server.referee.seats import Seats
from cfarena.server.storage import (
    BotInfo,
    Database,
    LeaseLost,
    MatchPlan,
    MatchStatus,
    SkillStanding,
    StoredMatch,
)
from cfarena.server.storage.arena_fleet import ArenaBeat
from cfarena.server.storage.match_writer import MatchWriter, dump_unsaved, is_outage, to_stored

STOP_GRACE_S = 5.0  # running matches get this long to finish on SIGINT/SIGTERM
IDLE_POLL_S = 0.1  # no table to start: look again after this long
SCHEDULE_RETRY_S = (0.5, 5.0)  # scheduling failed: first retry, then doubling to
SEED_BITS = 62

EntrantKey = tuple[str, str]  # (bot name, version)


def say(line: str) -> None:
    """One line for the organiser watching the terminal (stderr)."""
    print(line, file=sys.stderr, flush=True)


@dataclass
class ServeResult:
    finished: int = 0  # matches played to the end
    aborted: int = 0  # matches stored as aborted (cut off by the stop, referee errors)
    unsaved: Path | None = None  # where the records that could not be stored went


@dataclass
class ArenaStats:
    """Counters for whoever watches the arena (metrics, tests); updated on the loop."""

    started: int = 0  # matches started
    finished: int = 0
    aborted: int = 0
    running: int = 0  # matches in play now
    kicked: int = 0  # connections closed because their token was revoked or rotated
    polls: int = 0  # successful polls of the database
    last_poll: float | None = None  # time.monotonic() of the last successful poll
    started_by_bot: dict[str, int] = field(default_factory=dict)
    reaped: int = 0  # matches of dead arenas this one marked aborted
    lost: int = 0  # matches of this arena another one aborted while it was silent
    refused: int = 0  # tables not started: a bot had no slot left across the arenas


class Arena:
    """`cfarena serve`: a referee, a ladder and storage. `await Arena(...).run()`."""

    def __init__(self, db: Database, config: ArenaConfig,
                 report: Callable[[str], None] = say) -> None:
        self.db = db
        self.config = config
        self.report = report
        self.tokens = LiveTokens(db)
        self.id = uuid.uuid4().hex[:16]  # this arena among those on the database
        self.stats = ArenaStats()
        self.server: RefereeServer | None = None
        self.writer: MatchWriter | None = None
        # Seeds from the OS's CSPRNG: a bot that dials in cannot find its match's seed
        # from its hand, nor predict the next one, and a restart never replays a deal.
        self._rng: random.Random = (secrets.SystemRandom() if config.seed is None
                                    else random.Random(config.seed))
        self._seeds: set[int] = set()
        self._ids: dict[str, int] = {}  # bot name -> id (from the poll)
        self._skills: dict[EntrantKey, Skill] = {}
        self._seat_counts: dict[EntrantKey, list[int]] = {}
        self._last_start: dict[EntrantKey, float] = {}
        self._first_seen: dict[EntrantKey, float] = {}
        self._busy_elsewhere: dict[int, int] = {}  # bot id -> its matches on other arenas
        self._stop = asyncio.Event()
        self._running: set[asyncio.Task[None]] = set()
        self._leases: dict[str, str] = {}  # match key -> its lease, while it plays here
        self._plays: dict[str, asyncio.Task[None]] = {}  # match key -> its task
        self._lost: set[str] = set()  # matches whose lease was revoked while they play
        self.paused = False  # no new table while set (running matches play on)
        # told of each match record once it is stored (the web page's live updates)
        self.on_stored: list[Callable[[StoredMatch], None]] = []

    # ---------------------------------------------------------------- running
    def stop(self) -> None:
        """Stop as SIGINT/SIGTERM do."""
        self._stop.set()

    def pause(self) -> None:
        """Start no new table until `resume()`; running matches finish."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    async def run(self) -> ServeResult:
        """Run matches among connected registered bots until stopped (or `max_matches`
        were started and are over). OSError when it cannot listen."""
        config = self.config
        loop = asyncio.get_running_loop()
        self._apply_bots(await asyncio.to_thread(self.db.list_bots), time.monotonic())
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        self.server = server = RefereeServer(self.tokens, host=config.host, port=config.port,
                                             **dict(config.referee_options))
        await server.start()
        self.writer = writer = MatchWriter(self.db, self.report)
        writer.on_written = self.on_stored
        writer.start()
        result = ServeResult()
        poller = loop.create_task(self._poll_forever())
        try:
            try:
                # only once it holds the port: a `serve` refused for a port in use
                # (another one, maybe on this database) must not touch matches in play
                stopped = AbortReason.REFEREE_STOPPED.text()
                start = await asyncio.to_thread(self.db.arena_started, self.id,
                                                socket.gethostname(), server.address,
                                                config.stale_s, stopped)
                if start.aborted:
                    stale = len(start.aborted)
                    self.report(f"{stale} match{'' if stale == 1 else 'es'} left running by "
                                f"a stopped referee marked aborted ({stopped!r})")
                self._report_died(start.died)
                self.report(f"referee listening on {server.address} ({len(self._ids)} "
                            f"registered bots; arena {self.id}); Ctrl-C stops it")
                await self._play_matches(result)
            finally:
                poller.cancel()
                await asyncio.gather(poller, return_exceptions=True)
                await server.stop(grace=0)  # done already, unless something failed before
        finally:
            left = await writer.close(config.flush_s)  # then the unsaved file
            if left:
                result.unsaved = self._keep_unsaved(left, config.unsaved_dir or Path.cwd())
            try:  # the other arenas need not wait for its heartbeat to go stale
                await asyncio.to_thread(self.db.arena_stopped, self.id)
            except Exception as exc:
                self.report(f"error: cannot mark arena {self.id} stopped: {exc}")
        return result

    # -------------------------------------------------------------- the poll
    async def _poll_forever(self) -> None:
        while True:
            await self.poll()
            await asyncio.sleep(self.config.poll_s)

    async def poll(self) -> None:
        """Read bots, tokens and the pool's ratings from the database (in a worker
        thread) and apply them: revoked or rotated-away tokens' connections close."""
        assert self.writer is not None
        started = time.monotonic()
        try:
            bots, standings, beat = await self.writer.call(self._read_state,
                                                           dict(self._leases))
        except Exception as exc:  # reported by the writer (an outage) or here
            if not is_outage(exc):
                self.report(f"error: cannot read the bots and ratings: {exc}")
            return
        self._apply_bots(bots, started)
        self._apply_standings(standings)
        self._busy_elsewhere = dict(beat.busy_elsewhere)
        self._report_died(beat.died)
        self._stop_lost(beat.lost)
        self.stats.polls += 1
        self.stats.last_poll = time.monotonic()

    def _report_died(self, died: Sequence[str]) -> None:
        if died:
            self.stats.reaped += len(died)
            self.report(f"{len(died)} match{'' if len(died) == 1 else 'es'} of a dead arena "
                        f"marked aborted: {', '.join(died)}")

    def _stop_lost(self, lost: Sequence[str]) -> None:
        """Stop the matches whose lease this arena lost (it was silent past the stale
        limit and another arena aborted them): nothing of them is stored."""
        keys = [key for key in lost if key in self._leases and key not in self._lost]
        if not keys:
            return
        self.stats.lost += len(keys)
        self._lost.update(keys)
        self.report(f"arena {self.id} was silent past the stale limit "
                    f"({self.config.stale_s:g} s) and another arena aborted its "
                    f"match{'' if len(keys) == 1 else 'es'} {', '.join(keys)}: stopped "
                    "here, not stored")
        for key in keys:
            task = self._plays.get(key)
            if task is not None:
                task.cancel()

    def _start_fresh(self, key: str) -> str:
        return self.db.mark_running(key, fresh=True)

    def _read_state(self, leases: dict[str, str]
                    ) -> tuple[list[BotInfo], list[SkillStanding], ArenaBeat]:
        beat = self.db.arena_beat(self.id, self.config.stale_s, leases)
        return self.db.list_bots(), self.db.skill_standings(self.config.pool), beat

    def _apply_bots(self, bots: Sequence[BotInfo], polled_at: float) -> None:
        self._ids = {b.name: b.id for b in bots}
        active = {b.token_hash: b.name for b in bots if b.revoked_at is None}
        connections = self.server.connections() if self.server is not None else []
        for line in self.tokens.sync(active, polled_at, connections):
            self.stats.kicked += 1
            self.report(line)

    def _apply_standings(self, standings: Sequence[SkillStanding]) -> None:
        self._skills = {(x.name, x.version): Skill(x.mu, x.sigma, x.games) for x in standings}
        # the database counts every match scheduled so far (the ones started since
        # this poll's query began are counted again in the next)
        self._seat_counts = {(x.name, x.version): list(x.seats) for x in standings}

    # ------------------------------------------------------------ the ladder
    @property
    def seats(self) -> Seats:
        """The referee's connections as seats (once `run` has started the referee)."""
        assert self.server is not None
        return self.server.seats

    @property
    def players(self) -> int:
        """The seats of a table on this arena's ladder."""
        return self.config.players

    def connected_bots(self) -> frozenset[str]:
        """The registered bots dialled in here now, with an open connection (none
        before the referee runs). On the loop."""
        if self.server is None:
            return frozenset()
        return frozenset(name for name in self.seats.capacity() if name in self._ids)

    def entrants(self, now: float | None = None) -> list[Entrant]:
        """The connected (bot, version)s as the ladder sees them."""
        now = time.monotonic() if now is None else now
        left = self._slots_left()
        out = []
        for key, here in self.seats.free().items():
            if key[0] not in self._ids:
                continue
            slots = min(here, left.get(key[0], 0))
            since = max(self._last_start.get(key, 0.0), self._first_seen.setdefault(key, now))
            skill = self._skills.get(key, Skill())
            seats = self._seat_counts.get(key, [])
            out.append(Entrant(bot=key[0], version=key[1], free=slots, games=sum(seats),
                               mu=skill.mu, sigma=skill.sigma, seats=tuple(seats),
                               waiting_s=now - since))
        return out

    def _slots_left(self) -> dict[str, int]:
        """Bot name -> matches it can still take across the arenas: its capacity here
        (its connections' summed) less its matches here and on the other arenas."""
        return {name: free - self._busy_elsewhere.get(self._ids.get(name, -1), 0)
                for name, free in self.seats.free_by_bot().items()}

    def _capacities(self, table: Sequence[Entrant]) -> dict[int, int]:
        """Bot id -> its capacity here (summed over its open connections), for the
        table's bots: what `Database.schedule_seated` checks across the arenas."""
        capacity = self.seats.capacity()
        return {self._ids[name]: capacity[name] for name in {e.bot for e in table}
                if name in capacity}

    def _refused(self, table: Sequence[Entrant], open_counts: dict[int, int]) -> None:
        """`schedule_seated` refused the table: count each bot's unfinished matches the
        database knows of beyond those it plays here as busy elsewhere, until the poll."""
        here = self.seats.playing()
        for entrant in table:
            bot_id = self._ids[entrant.bot]
            elsewhere = open_counts.get(bot_id, 0) - here.get(entrant.bot, 0)
            self._busy_elsewhere[bot_id] = max(self._busy_elsewhere.get(bot_id, 0), elsewhere)
        self.stats.refused += 1

    def _reserve(self, key: str, table: Sequence[Entrant]) -> list[BotConnection]:
        """One connection per seat (the freest of that bot and version), reserved."""
        conns = self.seats.take(key, [(e.bot, e.version) for e in table])
        assert conns is not None, "the ladder picked a table without free seats"
        return conns

    def _started(self, table: Sequence[Entrant]) -> None:
        now = time.monotonic()
        for seat, entrant in enumerate(table):
            counts = self._seat_counts.setdefault(entrant.key, [])
            counts.extend([0] * (seat + 1 - len(counts)))
            counts[seat] += 1
            self._last_start[entrant.key] = now
            self.stats.started_by_bot[entrant.bot] = \
                self.stats.started_by_bot.get(entrant.bot, 0) + 1

    def new_seed(self) -> int:
        """A 62-bit seed never used before in this run (from the CSPRNG: a repeat
        across runs is as likely as guessing a 62-bit number)."""
        while True:
            seed = self._rng.getrandbits(SEED_BITS)
            if seed not in self._seeds:
                self._seeds.add(seed)
                return seed

    # ----------------------------------------------------------- the matches
    async def _play_matches(self, result: ServeResult) -> None:
        assert self.server is not None and self.writer is not None
        server, writer, config, report = self.server, self.writer, self.config, self.report
        loop = asyncio.get_running_loop()
        stopping = loop.create_task(self._stop.wait())
        options = config.rules.to_options()
        running = self._running
        release = self.seats.release
        retry = Backoff(*SCHEDULE_RETRY_S)

        def on_record(record: MatchRecord) -> None:  # every match, finished or aborted, once
            lease = self._leases.pop(record.match_id, None)
            if record.match_id in self._lost:  # stopped for its lost lease: said so
                return
            writer.submit(to_stored(record, lease))
            if record.status is MatchStatus.FINISHED:
                result.finished += 1
                self.stats.finished += 1
            else:
                result.aborted += 1
                self.stats.aborted += 1
            report(describe(record))

        async def play(key: str, table: list[str], match_seed: int,
                       conns: list[BotConnection]) -> None:
            self.stats.running += 1
            try:
                await server.run_match(key, config.rules, match_seed, table,
                                       config.time_control, connections=conns,
                                       on_record=on_record)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    if key not in self._lost:
                        raise
                    task.uncancel()  # stopped for its lost lease (`_stop_lost`)
                # the stop cut the match off: on_record has queued it as aborted
            except ShuttingDown:  # never seated: store it as not played
                release(key, conns)
                result.aborted += 1
                self.stats.aborted += 1
                writer.submit(StoredMatch(key, status=MatchStatus.ABORTED,
                                          reason=AbortReason.REFEREE_STOPPED.text(),
                                          lease=self._leases.pop(key, None)))
            except Exception as exc:  # a referee bug: on_record has queued it as aborted
                report(f"error: match {key}: {type(exc).__name__}: {exc}")
            finally:
                self.stats.running -= 1
                self._plays.pop(key, None)
                self._leases.pop(key, None)
                self._lost.discard(key)

        async def pause(seconds: float) -> None:
            await asyncio.wait({stopping}, timeout=seconds)

        try:
            while not self._stop.is_set() and (config.max_matches is None
                                               or self.stats.started < config.max_matches):
                if len(running) >= config.concurrency:
                    await asyncio.wait({*running, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    continue
                if self.paused:
                    await pause(IDLE_POLL_S)
                    continue
                table = pick_table(self.entrants(), config.players, self._rng, config.ladder)
                if table is None:
                    await pause(IDLE_POLL_S)
                    continue
                key = f"serve-{uuid.uuid4().hex[:12]}"
                conns = self._reserve(key, table)  # no await since the pick: all free
                match_seed = self.new_seed()
                plan = MatchPlan(key, match_seed, options, config.players,
                                 [self._ids[e.bot] for e in table],
                                 seat_versions=[e.version for e in table])
                try:
                    refused = await writer.call(self.db.schedule_seated, plan, self.id,
                                                self._capacities(table))
                except Exception as exc:  # the database away (or refusing): not started
                    release(key, conns)
                    if not is_outage(exc):
                        report(f"error: cannot schedule a match: {exc}")
                    await retry.wait(self._stop)
                    continue
                retry.reset()
                if refused is not None:  # a bot is busy on other arenas: pick again
                    release(key, conns)
                    self._refused(table, refused)
                    continue
                try:
                    self._leases[key] = await writer.call(self._start_fresh, key)
                except LeaseLost as exc:  # aborted by another arena while this one slept
                    release(key, conns)
                    report(str(exc))
                    continue
                except Exception as exc:  # stored, but not as started: not played at all
                    release(key, conns)
                    if not is_outage(exc):
                        report(f"error: cannot start match {key}: {exc}")
                    writer.submit(StoredMatch(key, status=MatchStatus.ABORTED,
                                              reason=AbortReason.NOT_STARTED.text(str(exc))))
                    await retry.wait(self._stop)
                    continue
                self._started(table)
                task = loop.create_task(play(key, [e.bot for e in table], match_seed, conns))
                self._plays[key] = task
                running.add(task)
                task.add_done_callback(running.discard)
                self.stats.started += 1
                await asyncio.sleep(0)  # it starts now: a stop from here on lets it finish
            while running and not self._stop.is_set():  # --max-matches: let them finish
                await asyncio.wait({*running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # a second Ctrl-C while stopping is ignored (not a KeyboardInterrupt traceback)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, lambda: None)
            # running matches get STOP_GRACE_S, then are cut off (on_record: aborted);
            # every bot is told the referee is shutting down
            await server.stop(grace=STOP_GRACE_S)
            if running:
                await asyncio.gather(*running, return_exceptions=True)
            stopping.cancel()
            await asyncio.gather(stopping, return_exceptions=True)

    def _keep_unsaved(self, records: list[StoredMatch], directory: Path) -> Path:
        """Write the records the database did not take to a file (in `directory`, else
        in the temp dir) and say where; the file's path."""
        what = f"{len(records)} match record{'' if len(records) == 1 else 's'}"
        problem: OSError | None = None
        for where in (directory, Path(tempfile.gettempdir())):
            try:
                path = dump_unsaved(records, where)
            except OSError as exc:
                problem = problem or exc
                continue
            self.report(f"error: could not store {what}; written to {path}")
            return path
        self.report(f"error: could not store {what}, nor write them to a file: {problem}")
        return directory


def describe(record: MatchRecord) -> str:
    """One line per match for the terminal: its key, then per seat (in seat order)
    the rank, bot and total, and the number of rounds (or why it was aborted)."""
    if record.status is not MatchStatus.FINISHED:
        return f"match {record.match_id} aborted: {record.reason}"
    seats = []
    for seat, bot in enumerate(record.seat_bots):
        forfeit = " (forfeited)" if seat in record.forfeited else ""
        seats.append(f"{record.ranks[seat]}. {bot} {record.totals[seat]}{forfeit}")
    rounds = len(record.round_scores)
    return (f"match {record.match_id}: {', '.join(seats)} "
            f"({rounds} round{'' if rounds == 1 else 's'})")
