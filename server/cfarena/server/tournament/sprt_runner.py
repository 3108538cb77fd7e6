"""Running a bot test (`cfarena sprt NEW OLD`): deal groups, played like a tournament's
matches, until the sequential test decides.

A test is stored as a tournament of its own (`storage.sprt_store`): its matches are
scheduled, played by a `TournamentPlayer` (fresh sandboxed processes per seat, stored
and rated in one transaction) and shown like any tournament's. Group g is one deal
(`group_seed`) in every seating of `sprt.deal_group.seatings`, keys "g<g>-s<seating>".
Up to `concurrency` groups are played side by side, seating by seating: the matches of
one seating (different deals) run at once, and between seatings every bot process is
stopped and the host's caches dropped (`TournamentPlayer.enter_phase`), since NEW and
OLD hold every seat of a group's deal. After a batch the test counts its groups in
order, checking after each (`sprt.sequential.SequentialTest`), and stores each
counted group with the LLR after it; groups of the batch after the decision are
stored matches but not counted.

Running the same configuration again resumes the test: counted groups are read back,
a group whose matches are all stored is counted without playing, the rest of a group
is played from its seeds (the same deals: a half-played group is completed as it
would have been). A decided test is only reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cfarena.engine import Rules
from cfarena.server.referee import MatchRecord, RefereeServer, TimeControl, TokenRegistry
from cfarena.server.sandbox.host_reset import HostReset, claim_host_reset
from cfarena.server.sprt.deal_group import group_score, seatings
from cfarena.server.sprt.match_results import ScoreKind, log_seated_results
from cfarena.server.sprt.sequential import SequentialTest, SprtBounds, SprtStatus, Verdict
from cfarena.server.storage import (
    Database,
    MatchPlan,
    MatchStatus,
    ScheduledMatch,
    TournamentStatus,
    config_hash,
)
from cfarena.server.storage.match_writer import dump_unsaved
from cfarena.server.storage.models import SprtVerdict
from cfarena.server.storage.sprt_store import GroupPoint, SprtStore, SprtTestInfo
from cfarena.server.tournament.config import (
    BotSpec,
    TournamentConfig,
    TournamentError,
    host_defences,
)
from cfarena.server.tournament.match_queue import play_all
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.stored_tournament import entrant_ids, lock_tournament
from cfarena.server.tournament.tournament_player import TournamentPlayer

_FLUSH_TIMEOUT_S = 60.0  # at the end, how long stored matches may wait for the database


def group_seed(test_seed: int, group: int) -> int:
    """The deal of group `group` of a test whose seed is `test_seed`."""
    digest = hashlib.sha256(f"cfarena/sprt/{test_seed}/group-{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed 64-bit column


def match_key(group: int, seating: int) -> str:
    return f"g{group}-s{seating}"


@dataclass(frozen=True, slots=True)
class SprtConfig:
    """Everything that defines a bot test (its hash identifies it for resume)."""

    new: BotSpec
    old: BotSpec
    field: tuple[BotSpec, ...]
    rules: Rules
    players: int
    bounds: SprtBounds
    score: ScoreKind
    max_matches: int
    seed: int | None = None  # None: drawn from the OS's CSPRNG when the test is created
    time_control: TimeControl = dataclasses.field(default_factory=TimeControl)

    @property
    def seatings(self) -> tuple[tuple[str, ...], ...]:
        """The seatings of every deal group (`deal_group.seatings`)."""
        return seatings(self.new.name, self.old.name, [b.name for b in self.field],
                        self.players)

    @property
    def matches_per_group(self) -> int:
        return len(self.seatings)

    def tournament(self) -> TournamentConfig:
        """The tournament whose matches the test plays (its bots and how they play)."""
        seats = max((s.count(b.name) for s in self.seatings for b in self.field), default=1)
        return TournamentConfig(bots=(self.new, self.old, *self.field), rules=self.rules,
                                players=self.players, games=1, seed=self.seed,
                                time_control=self.time_control, fill=seats > 1)

    def to_json(self, launch: Launch | None = None) -> dict[str, Any]:
        """What identifies the test: its tournament's identity and the test's own terms."""
        return {**self.tournament().to_json(launch), "sprt": {
            "new": self.new.name, "old": self.old.name,
            "field": [f.name for f in self.field], **self.bounds.to_json(),
            "score": self.score.value, "max_matches": self.max_matches}}

    def new_test(self) -> SequentialTest:
        """The test, its cap rounded down to whole deal groups (at least one)."""
        k = self.matches_per_group
        return SequentialTest(self.bounds, k, max(self.max_matches // k, 1) * k)


class SprtProgress(Protocol):
    """What the CLI's progress display is told."""

    def started(self, test_id: int, status: SprtStatus, resumed: bool) -> None: ...

    def match_done(self, record: MatchRecord) -> None: ...

    def group_done(self, status: SprtStatus) -> None: ...


class _Quiet:
    def started(self, test_id: int, status: SprtStatus, resumed: bool) -> None:
        pass

    def match_done(self, record: MatchRecord) -> None:
        pass

    def group_done(self, status: SprtStatus) -> None:
        pass


@dataclass
class SprtRun:
    """What a finished (or stopped) run of a test did."""

    test_id: int
    tournament_id: int
    status: SprtStatus
    resumed: bool
    played: int  # matches played by this run
    wall_s: float
    already_finished: bool = False  # found decided: reported, nothing played


def stored_test(config: SprtConfig, store: SprtStore, info: SprtTestInfo) -> SequentialTest:
    """The test as far as it was counted: its stored group scores added again."""
    test = config.new_test()
    for point in store.groups(info.id):
        test.add(point.score)
    return test


def group_score_of(db: Database, config: SprtConfig, tournament_id: int, group: int) -> float:
    """The score of deal group `group` from its stored matches (all finished, else
    TournamentError)."""
    played = []
    for s in range(config.matches_per_group):
        match_id = f"T{tournament_id}-{match_key(group, s)}"
        detail = db.get_match(match_id)
        if detail is None or detail.match.status is not MatchStatus.FINISHED:
            state = "not stored" if detail is None else detail.match.status.value
            raise TournamentError(f"match {match_id} is {state}; run the same command "
                                  "again to play it")
        log = db.get_log(match_id)
        if log is None:
            raise TournamentError(f"match {match_id} has no stored game log to score")
        try:
            played.append(log_seated_results(log, config.score))
        except ValueError as exc:  # gamelog.LogError is one
            raise TournamentError(f"match {match_id}: its game log cannot be scored: "
                                  f"{exc}") from None
    return group_score(played, config.new.name, config.old.name)


async def run_sprt(config: SprtConfig, db: Database, launch: Launch, *,
                   concurrency: int = 2, progress: SprtProgress | None = None,
                   log_dir: Path | None = None) -> SprtRun:
    """Play (or resume) a test until its verdict; see the module docstring. A test
    another process is playing is refused (TournamentError)."""
    sink = progress or _Quiet()
    config.rules.resolve(config.players)  # RulesError before anything starts
    store = SprtStore(db)
    identity = config.to_json(launch)
    digest = config_hash(identity)
    started = time.monotonic()
    found = store.find_test(digest)
    if found is not None and found.decided:
        return SprtRun(found.id, found.tournament_id, stored_test(config, store, found).status(),
                       False, 0, time.monotonic() - started, already_finished=True)
    player: TournamentPlayer | None = None
    info = found
    locked = False  # this run holds the test's tournament lock (only then may it set its status)
    status = TournamentStatus.INTERRUPTED
    played = 0
    unsaved: str | None = None
    test = config.new_test() if found is None else stored_test(config, store, found)
    # unwound last in, first out: the lock, the host reset, the referee, its directory
    # (also when a Ctrl-C lands in the clean-up of the player below)
    async with contextlib.AsyncExitStack() as stack:
        server, host = await _local_referee(stack)
        locks = stack.enter_context(contextlib.ExitStack())
        try:
            if found is not None:
                lock_tournament(locks, db, found.tournament_id)
                locked = True
            tournament = config.tournament()
            player = TournamentPlayer(server, db, tournament, launch, concurrency, log_dir,
                                      acknowledge=True, host=host)
            await player.start(list(config.seatings) * concurrency)
            if info is None:
                seed = config.seed if config.seed is not None else secrets.randbits(62)
                stored = {**identity, "seed": seed, "seed_fixed": config.seed is not None,
                          "defences": host_defences(launch)}
                info = store.create_test(f"sprt {config.new.name} vs {config.old.name}",
                                         config.new.name, config.old.name, stored, digest)
                lock_tournament(locks, db, info.tournament_id)
                locked = True
            else:
                db.set_tournament_status(info.tournament_id, TournamentStatus.RUNNING)
            ids = entrant_ids(db, info.tournament_id, tournament)
            player.attach(info.tournament_id, {bot_id: name for name, bot_id in ids.items()})
            sink.started(info.id, test.status(), found is not None)
            played = await _play_groups(config, db, store, info, ids, player, test, sink,
                                        concurrency, first_phase=0 if found is None else 1)
            status = TournamentStatus.FINISHED
        finally:
            # what is played is stored before the status says so
            left = await player.close(_FLUSH_TIMEOUT_S) if player is not None else []
            if left:
                where = dump_unsaved(left, Path.cwd())
                status = TournamentStatus.INTERRUPTED
                unsaved = (f"{len(left)} finished match(es) could not be stored (the "
                           f"database is away); they are in {where}")
            if info is not None and locked:
                with contextlib.suppress(Exception):
                    db.set_tournament_status(info.tournament_id, status)
    if unsaved is not None:
        raise TournamentError(unsaved)
    assert info is not None
    return SprtRun(info.id, info.tournament_id, test.status(), found is not None, played,
                   time.monotonic() - started)


async def _local_referee(stack: contextlib.AsyncExitStack
                         ) -> tuple[RefereeServer, HostReset | None]:
    """A referee on a Unix socket in a private directory (0700) and this host's cache
    reset (None where it cannot be had), each undone by `stack`."""
    socket_dir = Path(tempfile.mkdtemp(prefix="cfarena-referee-"))
    stack.callback(shutil.rmtree, socket_dir, ignore_errors=True)
    server = RefereeServer(TokenRegistry(), port=None, unix_socket=socket_dir / "arena.sock")
    await server.start()
    stack.push_async_callback(server.stop, 0.5)
    host = claim_host_reset()
    if host is not None:
        stack.callback(host.release)
    return server, host


async def _play_groups(config: SprtConfig, db: Database, store: SprtStore, info: SprtTestInfo,
                       ids: dict[str, int], player: TournamentPlayer, test: SequentialTest,
                       sink: SprtProgress, concurrency: int, first_phase: int) -> int:
    """Play batches of groups and count them until the test decides; the matches played."""
    seed = int(info.config["seed"])
    options = config.rules.to_options()
    assert test.max_matches is not None
    max_groups = test.max_matches // config.matches_per_group  # the test ends there
    phase = first_phase
    played = 0

    async def play(match: ScheduledMatch) -> None:
        nonlocal played
        sink.match_done(await player.play(match))
        played += 1

    while test.verdict() is Verdict.CONTINUE:
        batch = range(test.groups, min(test.groups + concurrency, max_groups))
        plans = [MatchPlan(key=match_key(g, s), seed=group_seed(seed, g), rules=options,
                           players=config.players, seat_bot_ids=[ids[n] for n in seats])
                 for g in batch for s, seats in enumerate(config.seatings)]
        await asyncio.to_thread(db.schedule_matches, info.tournament_id, plans)
        pending = {m.key: m for m in await asyncio.to_thread(db.pending_matches,
                                                             info.tournament_id)}
        for s in range(config.matches_per_group):
            step = [pending[match_key(g, s)] for g in batch if match_key(g, s) in pending]
            if step:
                await player.enter_phase(phase)
                phase += 1
                await play_all(step, play, concurrency)
        for g in batch:
            score = await asyncio.to_thread(group_score_of, db, config, info.tournament_id, g)
            test.add(score)
            verdict = test.verdict()
            await asyncio.to_thread(store.add_group, info.id, GroupPoint(g, score, test.llr),
                                    test.matches, SprtVerdict(verdict.value))
            sink.group_done(test.status())
            if verdict is not Verdict.CONTINUE:
                break
    return played


__all__ = ["SprtConfig", "SprtProgress", "SprtRun", "group_seed", "run_sprt"]
