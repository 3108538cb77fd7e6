"""A bot test (`cfarena sprt NEW OLD`) as storage holds it: its configuration, its deal
groups' matches, and the one step that counts finished groups, decides, and schedules
the next ones (`advance`), whoever plays the matches.

Group g is one deal (`group_seed`) in every seating of `sprt.deal_group.seatings`,
keys "g<g>-s<seating>" (`schedule.group_key`). Groups are scheduled a batch at a time
(`groups_per_batch`, fixed when the test is created and stored with it), and a batch
is played seating by seating (`schedule.group_phase`). `advance` counts the groups
whose matches are all finished, in group order (never in the order they happen to
finish: the test's stopping rule sees the same sequence however the matches are
shared out), checking the test after each; the first group after which it decides is
the last one counted. Once every scheduled group is counted and the test goes on, it
schedules the next batch. It writes through `Database.count_sprt_groups`, which holds
the test row's lock and writes only if no other process counted meanwhile (then it
reads again): the local run and any number of queue workers may call it at once, and
the test is counted, decided and scheduled once.

On PostgreSQL (`advance_queued`) the scheduled batch's matches are queued as jobs for
`cfarena worker`s. What a decision does to the test's matches (as fishtest and
fastchess: the verdict is the decision's, and work on later pairs is dropped, never
added to it):

- The verdict is fixed by the group that decided: a decided test counts nothing more
  (`count_sprt_groups`).
- No match of the test starts after the decision (`Database.mark_running` refuses it,
  whichever worker took its job and whenever it checked the verdict), except the
  replay of a match in play at the decision after its referee's stall (it renews the
  lease it holds: the same match going on).
- Its queued jobs are cancelled and the matches no one holds are aborted ("the test
  decided": `Database.abort_unheld`): those not begun, and those whose player was taken
  for dead (lease revoked). A match in play finishes and is stored (its log and
  replay are kept), not counted.
- So a deal group past the decision is never counted, whole or not: one begun before
  it keeps the rotations played (stored, shown, rated in the test's own pool like any
  of its matches) and has the others aborted; one not begun has every rotation
  aborted. The counted groups are whole, in order, up to the deciding one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cfarena.engine import Rules
from cfarena.server.referee import TimeControl
from cfarena.server.sprt.deal_group import group_score, seatings
from cfarena.server.sprt.match_results import ScoreKind, log_seated_results
from cfarena.server.sprt.sequential import SequentialTest, SprtBounds, Verdict
from cfarena.server.storage import Database, MatchPlan, MatchStatus, canonical_json
from cfarena.server.storage.models import SprtVerdict
from cfarena.server.storage.sprt_store import GroupPoint, SprtTestInfo
from cfarena.server.tournament import job_queue
from cfarena.server.tournament.config import BotSpec, TournamentConfig, TournamentError
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import group_key, group_phase
from cfarena.server.tournament.stored_tournament import match_phases
from cfarena.server.tournament.tournament_player import stored_config

if TYPE_CHECKING:  # the queue (and procrastinate) load only on PostgreSQL
    import procrastinate

DECIDED = "the bot test decided before it was played"


def group_seed(test_seed: int, group: int, mix: str = "") -> int:
    """The deal of group `group` of a test whose seed is `test_seed`; `mix` (the test's
    identity, for a seed the organiser fixed: `SprtConfig.seed_mix`) makes the deals
    of two tests with one fixed seed differ."""
    salt = f"/{hashlib.sha256(mix.encode()).hexdigest()}" if mix else ""
    digest = hashlib.sha256(f"cfarena/sprt/{test_seed}{salt}/group-{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed 64-bit column


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

    @property
    def seats_per_bot(self) -> int:
        """The most seats one bot holds in a match (a field bot repeated: more than 1)."""
        return max(seats.count(name) for seats in self.seatings for name in set(seats))

    @property
    def seed_mix(self) -> str:
        """What `group_seed` mixes into the deals: the test's whole identity (`to_json`:
        every bot's name, command and files, the rules, bounds, cap and score) when
        the organiser fixed the seed, so two tests with one --seed that differ in
        anything play other deals; nothing for a drawn seed (unpredictable already)."""
        if self.seed is None:
            return ""
        return canonical_json(self.to_json())

    def tournament(self) -> TournamentConfig:
        """The tournament whose matches the test plays (its bots and how they play)."""
        return TournamentConfig(bots=(self.new, self.old, *self.field), rules=self.rules,
                                players=self.players, games=1, seed=self.seed,
                                time_control=self.time_control, fill=self.seats_per_bot > 1)

    def to_json(self, launch: Launch | None = None) -> dict[str, Any]:
        """What identifies the test: its tournament's identity (with the seats a bot
        really holds) and the test's own terms."""
        identity = self.tournament().to_json(launch)
        identity.pop("seats_per_bot", None)
        if self.seats_per_bot > 1:
            identity["seats_per_bot"] = self.seats_per_bot
        return {**identity, "sprt": {
            "new": self.new.name, "old": self.old.name,
            "field": [f.name for f in self.field], **self.bounds.to_json(),
            "score": self.score.value, "max_matches": self.max_matches}}

    def new_test(self) -> SequentialTest:
        """The test, its cap rounded down to whole deal groups (at least one)."""
        k = self.matches_per_group
        return SequentialTest(self.bounds, k, max(self.max_matches // k, 1) * k)


def stored_sprt_config(stored: Mapping[str, Any]) -> SprtConfig:
    """The test as `SprtConfig.to_json` (and the test's creation) stored it: what a
    queue worker on another machine counts and schedules."""
    tournament, _launch = stored_config(dict(stored))
    try:
        terms = stored["sprt"]
        new, old, *field = tournament.bots
        return SprtConfig(new, old, tuple(field), tournament.rules, tournament.players,
                          SprtBounds.from_json(terms), ScoreKind(terms["score"]),
                          int(terms["max_matches"]), tournament.seed,
                          tournament.time_control)
    except (KeyError, TypeError, ValueError) as exc:
        raise TournamentError(f"the stored bot test cannot be read: {exc}") from None


def stored_test(config: SprtConfig, db: Database, info: SprtTestInfo) -> SequentialTest:
    """The test as far as it was counted: its stored group scores added again."""
    test = config.new_test()
    for point in db.sprt_groups(info.id):
        test.add(point.score)
    return test


def group_score_of(db: Database, config: SprtConfig, tournament_id: int, group: int) -> float:
    """The score of deal group `group` from its stored matches (all finished)."""
    played = []
    for s in range(config.matches_per_group):
        match_id = f"T{tournament_id}-{group_key(group, s)}"
        log = db.get_log(match_id)
        if log is None:
            raise TournamentError(f"match {match_id} has no stored game log to score")
        try:
            played.append(log_seated_results(log, config.score))
        except ValueError as exc:  # gamelog.LogError is one
            raise TournamentError(f"match {match_id}: its game log cannot be scored: "
                                  f"{exc}") from None
    return group_score(played, config.new.name, config.old.name)


def batch_plans(config: SprtConfig, stored: Mapping[str, Any], bot_ids: Mapping[str, int],
                first: int, max_groups: int) -> list[MatchPlan]:
    """The matches of the batch of deal groups from `first` (up to `max_groups`)."""
    seed, mix = int(stored["seed"]), config.seed_mix if stored.get("seed_fixed") else ""
    options = config.rules.to_options()
    last = min(first + int(stored.get("batch", {}).get("groups", 1)), max_groups)
    return [MatchPlan(key=group_key(g, s), seed=group_seed(seed, g, mix), rules=options,
                      players=config.players, seat_bot_ids=[bot_ids[n] for n in seats])
            for g in range(first, last) for s, seats in enumerate(config.seatings)]


@dataclass(frozen=True, slots=True)
class FirstMatches:
    """The matches a run of a test plays first, as far as is known before its bots start
    (`first_matches`): their keys, seatings (bot names) and phases; `phases`: the
    phases of every stored match of the test, when read (a test found stored)."""

    keys: list[str]
    seatings: list[tuple[str, ...]]
    order: list[int]  # the phase of each
    phases: dict[str, int] | None = None


def first_matches(db: Database, config: SprtConfig, info: SprtTestInfo | None,
                  groups_per_batch: int) -> FirstMatches:
    """What a run of the test plays first: a new test's first batch (`groups_per_batch`
    groups, fewer if its cap allows fewer), or the matches a stored test has pending
    (none: its next batch is not scheduled yet)."""
    k = config.matches_per_group
    if info is None:
        cap = config.new_test().max_matches
        assert cap is not None
        groups = range(min(groups_per_batch, cap // k))
        return FirstMatches(
            [group_key(g, s) for g in groups for s in range(k)],
            [seats for _g in groups for seats in config.seatings],
            [group_phase(g, s, groups_per_batch, k) for g in groups for s in range(k)])
    pending = db.pending_matches(info.tournament_id)
    phases = match_phases(db, info.tournament_id)
    names = db.tournament_bots(info.tournament_id)
    return FirstMatches([m.key for m in pending],
                        [tuple(names[i] for i in m.seat_bot_ids) for m in pending],
                        [phases.get(m.key, 0) for m in pending], phases)


@dataclass(frozen=True, slots=True)
class Step:
    """What one `advance` did: the groups it counted (in order), whether it scheduled
    a batch, and the test after it."""

    counted: list[GroupPoint]
    scheduled: bool
    test: SequentialTest

    @property
    def decided(self) -> bool:
        return self.test.verdict() is not Verdict.CONTINUE


def advance(db: Database, config: SprtConfig, test_id: int) -> Step:
    """Count the test's finished deal groups, decide, and schedule its next batch when
    every scheduled group is counted (see the module docstring)."""
    while True:
        info = db.get_sprt_test(test_id)
        if info is None:
            raise TournamentError(f"no bot test {test_id}")
        test = stored_test(config, db, info)
        if info.decided:
            return Step([], False, test)
        k = config.matches_per_group
        assert test.max_matches is not None
        max_groups = test.max_matches // k
        finished = db.finished_keys(info.tournament_id)
        scheduled = sum(db.match_counts(info.tournament_id).values()) // k
        points: list[GroupPoint] = []
        group = info.groups
        while (test.verdict() is Verdict.CONTINUE and group < scheduled
               and all(group_key(group, s) in finished for s in range(k))):
            score = group_score_of(db, config, info.tournament_id, group)
            test.add(score)
            points.append(GroupPoint(group, score, test.llr))
            group += 1
        verdict = test.verdict()
        plans: list[MatchPlan] = []
        if verdict is Verdict.CONTINUE and group == scheduled:
            ids = {name: bot_id for bot_id, name in
                   db.tournament_bots(info.tournament_id).items()}
            plans = batch_plans(config, info.config, ids, group, max_groups)
        if not points and not plans:
            return Step([], False, test)
        if db.count_sprt_groups(test_id, info.groups, points, test.matches,
                                SprtVerdict(verdict.value), plans):
            return Step(points, bool(plans), test)


async def advance_queued(app: procrastinate.App, db: Database, config: SprtConfig,
                         test_id: int) -> Step:
    """`advance`, and on the job queue what follows from it: a scheduled batch's jobs
    queued; once the test decides, its queued jobs cancelled and the matches no one
    holds aborted (the app must be open)."""
    step = await asyncio.to_thread(advance, db, config, test_id)
    info = await asyncio.to_thread(db.get_sprt_test, test_id)
    assert info is not None
    tournament_id = info.tournament_id
    if step.decided:
        await job_queue.cancel_queued(app, tournament_id)
        await asyncio.to_thread(db.abort_unheld, tournament_id, DECIDED)
    else:  # every scheduled match without a job gets one, not only a batch scheduled now:
        # a worker that died between counting a batch and queueing it left its matches
        # without jobs, and its job, played again, finds its match stored and comes here
        pending = [m for m in await asyncio.to_thread(db.pending_matches, tournament_id)
                   if m.status is MatchStatus.SCHEDULED]
        queued = set(await asyncio.to_thread(job_queue.queued_matches, db.engine,
                                             tournament_id, ("todo", "doing"))
                     ) if pending else set()
        # rarely any: the phases (a read of every match) only then, not per stored match
        if any(m.id not in queued for m in pending):
            phases = await asyncio.to_thread(match_phases, db, tournament_id)
            await job_queue.enqueue(app, db.engine, tournament_id, pending, phases)
    return step


__all__ = ["DECIDED", "FirstMatches", "SprtConfig", "Step", "advance", "advance_queued",
           "first_matches", "group_seed", "stored_sprt_config"]
