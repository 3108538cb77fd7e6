"""The cfarena bot SDK: write a Chicken Foot bot in a few lines and play it on a referee.

    import random
    from cfarena.sdk import Bot

    class RandomBot(Bot):
        def choose(self, turn):
            return random.choice(turn.legal_moves)

Run it with `python -m cfarena.sdk run path/to/bot.py --server HOST:PORT --token T`
(or `run_bot(RandomBot(), server, token)` from Python). See docs/WRITING_A_BOT.md.
"""

from __future__ import annotations

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.rules import Draw, PlayDrawn, ResolvedRules, Start, TieBreak
from cfarena.engine.tiles import Tile
from cfarena.sdk.bot import Bot
from cfarena.sdk.client import PROTOCOL, SDK_VERSION, BotClient, BotConnectionError, run_bot
from cfarena.sdk.types import (
    Fault,
    FaultKind,
    MatchInfo,
    MatchResult,
    ProtocolError,
    TimeControl,
    Turn,
)

__version__ = SDK_VERSION

__all__ = [
    "DRAW",
    "PASS",
    "PROTOCOL",
    "Bot",
    "BotClient",
    "BotConnectionError",
    "Draw",
    "Event",
    "EventKind",
    "Fault",
    "FaultKind",
    "MatchInfo",
    "MatchResult",
    "Move",
    "MoveKind",
    "Observation",
    "PlacedTile",
    "PlayDrawn",
    "ProtocolError",
    "ResolvedRules",
    "RoundEnd",
    "Start",
    "TieBreak",
    "Tile",
    "TimeControl",
    "Turn",
    "run_bot",
]
