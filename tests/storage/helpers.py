"""Small builders and raw-table snapshots for the storage tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from cfarena.server.storage import Database, MatchPlan, StoredMatch, hash_token

TABLES = ("bots", "tournaments", "matches", "match_seats", "faults", "seat_logs", "game_logs",
          "ratings", "rating_history", "skill_ratings", "skill_history", "arenas",
          "sprt_tests", "sprt_groups", "ladder_bot_tallies", "ladder_seat_tallies",
          "ladder_result_tallies")
STANDARD = {"preset": "standard"}


def bots(db: Database, *names: str) -> list[int]:
    return [db.register_bot(name, hash_token(f"token-of-{name}")).bot_id for name in names]


def plan(key: str, seats: list[int], seed: int = 7, rules: dict[str, Any] | None = None
         ) -> MatchPlan:
    return MatchPlan(key=key, seed=seed, rules=rules or STANDARD, players=len(seats),
                     seat_bot_ids=seats)


def result(match_id: str, round_scores: list[list[int]], ranks: list[int],
           **extra: Any) -> StoredMatch:
    totals = [sum(r[s] for r in round_scores) for s in range(len(ranks))]
    return StoredMatch(match_id=match_id, round_scores=round_scores, totals=totals, ranks=ranks,
                       **extra)


def snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, as sorted string tuples (for before/after comparisons)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with db.engine.connect() as conn:
        for table in TABLES:
            rows = conn.execute(text(f"SELECT * FROM {table}")).all()
            out[table] = sorted(tuple(str(v) for v in row) for row in rows)
    return out


def count(db: Database, table: str) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())
