"""Stored games for the entrant tests: a 2-player tournament whose matches are played
in-process under the match law (`replay.simulate`) and stored as the tournament's
runner stores them (game log, faults, each seat's output with a marker naming its
bot), and what a seat may never be shown of a log (`unseen_tiles`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cfarena.match.bot_ids import wire_match_id
from cfarena.match.log_format import record_to_log
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import Database, MatchPlan, SeatLog
from cfarena.server.storage.match_writer import to_stored

RULES = {"preset": "standard", "rounds": "single"}
ENTRANTS = ("alpha", "beta", "gamma")
DEAL_SEED = 4242424242424242
OTHER_SEED = 777777777777


def output_marker(bot: str, match_id: str) -> str:
    """What bot `bot`'s process printed in `match_id` (one line, unique to both)."""
    return f"SECRET-OUTPUT-OF-{bot}-IN-{match_id}"


@dataclass
class Tournament:
    """The stored tournament: rotation 1 of deal DEAL_SEED (alpha, beta) finished,
    rotation 2 (beta, alpha) scheduled; a match of beta and gamma finished."""

    id: int
    first: str  # alpha in seat 0, beta in seat 1; finished
    second: str  # the same deal, seats swapped; scheduled (then played: `play`)
    others: str  # beta and gamma, no alpha; finished
    logs: dict[str, dict[str, Any]]  # match id -> its stored log
    keys: dict[str, str]  # match id -> key

    def wire_id(self, match_id: str, seed: int = DEAL_SEED) -> str:
        return wire_match_id(seed, self.keys[match_id])


def play(db: Database, match_id: str, key: str, tid: int, seed: int,
         seats: list[str], exit: str = "exited with code 0") -> dict[str, Any]:
    """Play match `match_id` in-process (greedy seats) and store it with seat outputs
    (each seat's process ended as `exit` says)."""
    record = simulate_record(RULES, len(seats), seed, "greedy", names=seats)
    record.match_id, record.tournament_id, record.key = match_id, tid, key
    stored = to_stored(record, db.mark_running(match_id))
    for seat, bot in enumerate(seats):
        text = f"starting {bot}\n{output_marker(bot, match_id)}\n"
        stored.seat_logs.append(SeatLog(seat, text, len(text), exit))
    assert db.record_match(stored)
    return record_to_log(record)


def store_tournament(db: Database) -> Tournament:
    tid = db.create_tournament("entrants", {
        "seed": 1, "players": 2, "games": 2, "rules": RULES,
        "bots": [{"name": n, "command": f"/bots/{n}"} for n in ENTRANTS]})
    ids = db.register_entrants(tid, {n: f"/bots/{n}" for n in ENTRANTS})
    plans = [MatchPlan("g0-r0", DEAL_SEED, RULES, 2, [ids["alpha"], ids["beta"]]),
             MatchPlan("g0-r1", DEAL_SEED, RULES, 2, [ids["beta"], ids["alpha"]]),
             MatchPlan("g1-r0", OTHER_SEED, RULES, 2, [ids["beta"], ids["gamma"]])]
    first, second, others = db.schedule_matches(tid, plans)
    keys = {first: "g0-r0", second: "g0-r1", others: "g1-r0"}
    logs = {first: play(db, first, "g0-r0", tid, DEAL_SEED, ["alpha", "beta"]),
            others: play(db, others, "g1-r0", tid, OTHER_SEED, ["beta", "gamma"])}
    return Tournament(tid, first, second, others, logs, keys)


def seen_tiles(log: Mapping[str, Any], seat: int) -> set[str]:
    """Every tile `seat` saw in the match: its dealt hands and own draws, and every
    public tile (the centres, plays, draw-offs)."""
    seen = {t for deal in log["deals"] for t in deal["hands"][seat]}
    for event in log["events"]:
        if "tile" in event and (event["kind"] != "draw" or event.get("seat") == seat):
            seen.add(event["tile"])
    return seen


def unseen_tiles(log: Mapping[str, Any], seat: int) -> set[str]:
    """The tiles of the match `seat` never saw (other hands, the boneyard)."""
    dealt = {t for deal in log["deals"] for hand in deal["hands"] for t in hand}
    dealt |= {t for deal in log["deals"] for t in deal["boneyard"]}
    return dealt - seen_tiles(log, seat)


def tiles_in(text: str, tiles: Iterable[str]) -> set[str]:
    """Which of `tiles` ("A-B") are written in `text` (not as part of a longer number)."""
    return {t for t in tiles if re.search(rf"(?<![0-9]){re.escape(t)}(?![0-9])", text)}
