"""A small ladder for the leaderboard's tests (the page in a browser, `cfarena
standings` in-process): four bots' matches in pool standard/4p, alice with two
versions, carol's timeout, dave revoked, erin registered but never played."""

from __future__ import annotations

from typing import Any

from cfarena.match.record import Fault
from cfarena.sdk.types import FaultKind
from cfarena.server.storage import MatchPlan, StoredMatch, open_database

POOL = "standard/4p"
# (alice's version, ranks of alice, bob, carol, dave): alice plays two versions
GAMES = [("1", (1, 2, 3, 4)), ("1", (2, 1, 4, 3)), ("1", (1, 3, 2, 4)),
         ("2", (1, 2, 3, 4)), ("2", (1, 4, 2, 3)), ("2", (2, 1, 3, 4))]


def fill(db_url: str) -> None:
    """Four bots' matches (carol times out in one), dave revoked, erin registered but
    never played."""
    with open_database(db_url) as db:
        ids = {name: db.register_bot(name, name[0] * 64).bot_id
               for name in ("alice", "bob", "carol", "dave", "erin")}
        for i, (version, ranks) in enumerate(GAMES):
            play(db, f"m{i}", [ids[n] for n in ("alice", "bob", "carol", "dave")], ranks,
                 [version, "", "", ""],
                 [Fault(2, FaultKind.TIMEOUT, "no answer in 1000 ms")] if i == 4 else [])
        db.revoke_bot("dave")


def play(db: Any, key: str, seats: list[int], ranks: tuple[int, ...],
          versions: list[str], faults: list[Fault]) -> None:
    db.schedule_matches(None, [MatchPlan(key, 100 + len(key) + sum(ranks) * 7 + ord(key[-1]),
                                         {"preset": "standard"}, 4, seats,
                                         seat_versions=versions)])
    lease = db.mark_running(key)
    db.record_match(StoredMatch(key, round_scores=[[10 * r for r in ranks]],
                                totals=[10 * r for r in ranks], ranks=list(ranks),
                                faults=faults, lease=lease))
