"""RandomBot: a uniformly random legal move.

Its random generator is seeded from a hash of (match_id, seat). A tournament's
match ids are the same in every run with the same seed (`run-tournament --seed`;
they are derived from each match's secret seed, and tell a bot nothing about its
deal), so replaying a tournament replays this bot's choices too.

    python -m cfarena.sdk run cfarena.bots.random_bot --token T
    python -m cfarena.bots.random_bot --token T
"""

from __future__ import annotations

import hashlib
import random
import threading

from cfarena.sdk import Bot, MatchInfo, MatchResult, Move, Turn
from cfarena.sdk.cli import run_main


def match_seed(match_id: str, seat: int) -> int:
    """A stable 64-bit seed for one seat of one match (unlike hash(), not salted per process)."""
    digest = hashlib.sha256(f"{match_id}\x00{seat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class RandomBot(Bot):
    """Plays a uniformly random legal move."""

    def __init__(self) -> None:
        self._rngs: dict[str, random.Random] = {}  # per match: matches may run concurrently
        self._lock = threading.Lock()

    def _rng(self, match_id: str, seat: int) -> random.Random:
        with self._lock:
            rng = self._rngs.get(match_id)
            if rng is None:
                rng = self._rngs[match_id] = random.Random(match_seed(match_id, seat))
            return rng

    def on_match_start(self, match: MatchInfo) -> None:
        self._rng(match.match_id, match.seat)

    def choose(self, turn: Turn) -> Move:
        return self._rng(turn.match_id, turn.seat).choice(turn.legal_moves)

    def on_match_end(self, result: MatchResult) -> None:
        with self._lock:
            self._rngs.pop(result.match_id, None)


if __name__ == "__main__":
    raise SystemExit(run_main(RandomBot))
