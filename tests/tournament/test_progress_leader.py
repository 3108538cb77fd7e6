"""`run-tournament`'s progress line names the leader of the standings as stored after
the match it reports (a real referee, bundled bots as real processes, unsandboxed, a
real SQLite file): the database is made slow to store, so a leader read as soon as a
match is played would miss it, and the last line's leader would not be the final
table's."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cfarena.engine import Rules
from cfarena.match.record import MatchRecord, TimeControl
from cfarena.server.standings import standings_rows
from cfarena.server.storage import Database, MatchStatus, open_database
from cfarena.server.tournament import BotSpec, TournamentConfig, run_tournament
from cfarena.server.tournament.pool import Launch

CONFIG = TournamentConfig(bots=(BotSpec("greedy"), BotSpec("smart"), BotSpec("random")),
                          rules=Rules.preset("standard").with_options(rounds=1), players=2,
                          games=1, seed=11, time_control=TimeControl(move_timeout_ms=2000))
STORE_DELAY_S = 0.3


class _Lines:
    """A progress sink that keeps each line's leader and whether its match was stored
    when the line was told."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.lines: list[tuple[str | None, bool]] = []

    def started(self, tournament_id: int, total: int, done: int, resumed: bool) -> None:
        pass

    def match_done(self, record: MatchRecord, leader: str | None) -> None:
        found = self.db.get_match(record.match_id)
        stored = found is not None and found.match.status is MatchStatus.FINISHED
        self.lines.append((leader, stored))


def test_the_last_leader_is_the_final_tables(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[list[tuple[str | None, bool]], list[dict[str, Any]]]:
        with open_database(f"sqlite:///{tmp_path / 't.db'}") as db:
            record_match = db.record_match

            def slowly(*args: Any, **kwargs: Any) -> Any:
                time.sleep(STORE_DELAY_S)  # the writer's thread: the loop plays on
                return record_match(*args, **kwargs)

            monkeypatch.setattr(db, "record_match", slowly)
            sink = _Lines(db)
            run = await run_tournament(CONFIG, db, concurrency=2, progress=sink,
                                       launch=Launch(sandbox=False))
            assert run.status == "finished"
            return sink.lines, standings_rows(db, run.tournament_id)

    lines, final = asyncio.run(main())
    assert len(lines) == 6
    assert all(stored for _leader, stored in lines), lines  # told once stored
    assert all(leader is not None for leader, _ in lines), lines
    best = final[0]
    assert lines[-1][0] == f"{best['bot']} ({best['bt_elo']:.0f})"
