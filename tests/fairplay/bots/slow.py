"""A fair but slow bot: random legal moves, each after 0.2 s (a match that lasts, for
tests that stop a worker while a match is in play)."""

from __future__ import annotations

import random
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import Turn


class SlowBot(Bot):
    def choose(self, turn: Turn) -> Move:
        time.sleep(0.2)
        return random.choice(turn.legal_moves)
