"""Bot tests in storage (`cfarena sprt`): a test, its tournament and its LLR trace.

A test is stored as a tournament (its matches are that tournament's: scheduled,
played, stored, shown, replayed and exported like any other) plus a `sprt_tests`
row naming NEW and OLD, the bounds (`config`) and where the test stands, and a
`sprt_groups` row per deal group it counted, in order (score, LLR after it).
`SprtStore` composes over a `Database`: every method is one short transaction of
the facade's own sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.database import Database
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import (
    SprtGroup,
    SprtTest,
    SprtVerdict,
    Tournament,
    TournamentStatus,
)
from cfarena.server.storage.queries import aware


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


class SprtStore:
    """The bot tests of one database (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create_test(self, name: str, new_bot: str, old_bot: str, config: Mapping[str, Any],
                    config_hash: str) -> SprtTestInfo:
        """A new test and its (running) tournament, in one transaction; found again by
        `config_hash` (`find_test`)."""
        now = utc_now()
        with self.db._session(write=True) as s:
            tournament = Tournament(name=name, config=dict(config), config_hash=config_hash,
                                    status=TournamentStatus.RUNNING.value, created_at=now)
            s.add(tournament)
            s.flush()
            test = SprtTest(tournament_id=tournament.id, new_bot=new_bot, old_bot=old_bot,
                            config=dict(config), config_hash=config_hash,
                            verdict=SprtVerdict.CONTINUE.value, groups=0, matches=0, llr=0.0,
                            created_at=now)
            s.add(test)
            s.flush()
            return _info(test, tournament)

    def find_test(self, config_hash: str) -> SprtTestInfo | None:
        """The newest test with this config hash, finished or not."""
        with self.db._session() as s:
            row = s.execute(
                select(SprtTest, Tournament).join(Tournament, Tournament.id
                                                  == SprtTest.tournament_id)
                .where(SprtTest.config_hash == config_hash)
                .order_by(SprtTest.id.desc()).limit(1)).one_or_none()
            return None if row is None else _info(*row)

    def get_test(self, test_id: int) -> SprtTestInfo | None:
        with self.db._session() as s:
            row = s.execute(
                select(SprtTest, Tournament).join(Tournament, Tournament.id
                                                  == SprtTest.tournament_id)
                .where(SprtTest.id == test_id)).one_or_none()
            return None if row is None else _info(*row)

    def list_tests(self) -> list[SprtTestInfo]:
        """Every test, oldest first."""
        with self.db._session() as s:
            rows = s.execute(
                select(SprtTest, Tournament).join(Tournament, Tournament.id
                                                  == SprtTest.tournament_id)
                .order_by(SprtTest.id))
            return [_info(test, tournament) for test, tournament in rows]

    def groups(self, test_id: int) -> list[GroupPoint]:
        """The test's counted deal groups, in order (its LLR trace)."""
        with self.db._session() as s:
            rows = s.scalars(select(SprtGroup).where(SprtGroup.test_id == test_id)
                             .order_by(SprtGroup.group_number))
            return [GroupPoint(g.group_number, g.score, g.llr) for g in rows]

    def add_group(self, test_id: int, point: GroupPoint, matches: int,
                  verdict: SprtVerdict) -> None:
        """Count deal group `point.group` (the next one) and set where the test stands
        after it, in one transaction; a decided test gets its finishing time."""
        with self.db._session(write=True) as s:
            test = s.get(SprtTest, test_id)
            if test is None:
                raise StorageError(f"no bot test {test_id}")
            if point.group != test.groups:
                raise StorageError(f"bot test {test_id}: group {point.group} counted after "
                                   f"{test.groups} groups")
            now = utc_now()
            s.add(SprtGroup(test_id=test_id, group_number=point.group, score=point.score,
                            llr=point.llr, created_at=now))
            test.groups, test.matches, test.llr = point.group + 1, matches, point.llr
            test.verdict = verdict.value
            if verdict is not SprtVerdict.CONTINUE:
                test.finished_at = now
