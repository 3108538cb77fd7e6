"""Bot tests in storage (`cfarena sprt`): a test, its tournament and its LLR trace.

A test is stored as a tournament (its matches are that tournament's: scheduled,
played, stored, shown, replayed and exported like any other) plus a `sprt_tests`
row naming NEW and OLD, the bounds (`config`) and where the test stands, and a
`sprt_groups` row per deal group it counted, in order (score, LLR after it).

The test row is where the test decides, once: `count_sprt_groups` writes counted
groups (and schedules the next deal groups) only while the row still says what the
caller read, holding the row's lock (PostgreSQL: `SELECT ... FOR UPDATE`; SQLite:
its writers take the database's write lock up front). Two processes that finish
groups at once cannot both count them, nor both schedule or decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from cfarena.server.storage import scheduling
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import (
    SprtGroup,
    SprtTest,
    SprtVerdict,
    Tournament,
    TournamentStatus,
)
from cfarena.server.storage.queries import aware
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.upsert import insert_or_ignore
from cfarena.server.storage.values import MatchPlan


@dataclass(frozen=True, slots=True)
class SprtTestInfo:
    """A stored test: its bots, config, where it stands (`verdict`, after `groups`
    counted deal groups of `matches` matches, at `llr`) and its tournament's status
    (running, interrupted, finished)."""

    id: int
    tournament_id: int
    new_bot: str
    old_bot: str
    config: dict[str, Any]
    config_hash: str
    verdict: SprtVerdict
    groups: int
    matches: int
    llr: float
    status: TournamentStatus
    created_at: datetime
    finished_at: datetime | None

    @property
    def decided(self) -> bool:
        """Whether the test has its verdict (H1, H0 or inconclusive)."""
        return self.verdict is not SprtVerdict.CONTINUE


@dataclass(frozen=True, slots=True)
class GroupPoint:
    """One counted deal group of a test: its score and the test's LLR after it."""

    group: int
    score: float
    llr: float


def _info(test: SprtTest, tournament: Tournament) -> SprtTestInfo:
    return SprtTestInfo(
        id=test.id, tournament_id=test.tournament_id, new_bot=test.new_bot,
        old_bot=test.old_bot, config=test.config, config_hash=test.config_hash,
        verdict=SprtVerdict(test.verdict), groups=test.groups, matches=test.matches,
        llr=test.llr, status=TournamentStatus(tournament.status),
        created_at=aware(test.created_at),
        finished_at=None if test.finished_at is None else aware(test.finished_at))


def _with_tournament() -> Any:
    return select(SprtTest, Tournament).join(Tournament, Tournament.id == SprtTest.tournament_id)


class SprtStore(Sessions):
    """The bot tests' calls of `Database` (see the module docstring)."""

    def create_sprt_test(self, name: str, new_bot: str, old_bot: str,
                         config: Mapping[str, Any], config_hash: str) -> SprtTestInfo:
        """A new test and its (running) tournament, in one transaction; found again by
        `config_hash` (`find_sprt_test`). The hash is unique: when another process
        created the same test meanwhile (two `cfarena sprt` at once), nothing is
        written and that test is returned, so both attach to the one test."""
        now = utc_now()
        with self._session(write=True) as s:
            tournament = Tournament(name=name, config=dict(config), config_hash=config_hash,
                                    status=TournamentStatus.RUNNING.value, created_at=now)
            s.add(tournament)
            s.flush()
            # PostgreSQL: waits for a concurrent creator's transaction, then skips
            created = insert_or_ignore(s, SprtTest, [dict(
                tournament_id=tournament.id, new_bot=new_bot, old_bot=old_bot,
                config=dict(config), config_hash=config_hash,
                verdict=SprtVerdict.CONTINUE.value, groups=0, matches=0, llr=0.0,
                created_at=now)], conflict=[SprtTest.config_hash])
            if not created:
                s.delete(tournament)
            row = s.execute(_with_tournament().where(SprtTest.config_hash == config_hash)
                            ).one()
            return _info(*row)

    def find_sprt_test(self, config_hash: str) -> SprtTestInfo | None:
        """The test with this config hash (one at most), finished or not."""
        with self._session() as s:
            row = s.execute(_with_tournament().where(SprtTest.config_hash == config_hash)
                            ).one_or_none()
            return None if row is None else _info(*row)

    def get_sprt_test(self, test_id: int) -> SprtTestInfo | None:
        with self._session() as s:
            row = s.execute(_with_tournament().where(SprtTest.id == test_id)).one_or_none()
            return None if row is None else _info(*row)

    def sprt_test_of(self, tournament_id: int) -> SprtTestInfo | None:
        """The test whose matches are tournament `tournament_id`'s (None: a tournament)."""
        with self._session() as s:
            row = s.execute(_with_tournament().where(SprtTest.tournament_id == tournament_id)
                            ).one_or_none()
            return None if row is None else _info(*row)

    def list_sprt_tests(self) -> list[SprtTestInfo]:
        """Every test, oldest first."""
        with self._session() as s:
            rows = s.execute(_with_tournament().order_by(SprtTest.id))
            return [_info(test, tournament) for test, tournament in rows]

    def sprt_groups(self, test_id: int) -> list[GroupPoint]:
        """The test's counted deal groups, in order (its LLR trace)."""
        with self._session() as s:
            rows = s.scalars(select(SprtGroup).where(SprtGroup.test_id == test_id)
                             .order_by(SprtGroup.group_number))
            return [GroupPoint(g.group_number, g.score, g.llr) for g in rows]

    def count_sprt_groups(self, test_id: int, counted: int, points: Sequence[GroupPoint],
                          matches: int, verdict: SprtVerdict,
                          schedule: Sequence[MatchPlan] = ()) -> bool:
        """Count deal groups `points` (the next ones, in order) and set where the test
        stands after them, and schedule the matches `schedule` in its tournament, in one
        transaction holding the test row's lock; a decided test gets its finishing time.
        Only if the test has counted `counted` groups and is undecided (what the caller
        read): else nothing is written and False is returned (another process counted
        meanwhile: read again)."""
        for plan in schedule:
            scheduling.check_plan(plan)
        with self._session(write=True) as s:
            test = s.scalars(select(SprtTest).where(SprtTest.id == test_id)
                             .with_for_update()).one_or_none()
            if test is None:
                raise StorageError(f"no bot test {test_id}")
            if test.groups != counted or test.verdict != SprtVerdict.CONTINUE.value:
                return False
            now = utc_now()
            for n, point in enumerate(points):
                if point.group != counted + n:
                    raise StorageError(f"bot test {test_id}: group {point.group} counted "
                                       f"after {counted + n} groups")
                s.add(SprtGroup(test_id=test_id, group_number=point.group, score=point.score,
                                llr=point.llr, created_at=now))
            if points:
                test.groups, test.llr = counted + len(points), points[-1].llr
            test.matches, test.verdict = matches, verdict.value
            if verdict is not SprtVerdict.CONTINUE:
                test.finished_at = now
            scheduling.schedule_matches(s, test.tournament_id, schedule)
            return True
