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

from typing import TYPE_CHECKING, Any

from cfarena.engine.events import Event, EventKind, RoundEnd
from cfarena.engine.moves import DRAW, PASS, Move, MoveKind
from cfarena.engine.observation import Observation, PlacedTile
from cfarena.engine.rules import Draw, PlayDrawn, ResolvedRules, Start, TieBreak
from cfarena.engine.tiles import Tile
from cfarena.sdk.bot import Bot
from cfarena.sdk.types import (
    Fault,
    FaultKind,
    MatchInfo,
    MatchResult,
    ProtocolError,
    TimeControl,
    Turn,
)

if TYPE_CHECKING:
    from cfarena.sdk.client import PROTOCOL, SDK_VERSION, BotClient, BotConnectionError, run_bot

    __version__ = SDK_VERSION

# the client (and gRPC with it) is imported on first use: the value types alone
# (`cfarena.sdk.types`: TimeControl, FaultKind, ...) serve offline tools too
_CLIENT_NAMES = frozenset({"PROTOCOL", "SDK_VERSION", "BotClient", "BotConnectionError",
                           "run_bot", "__version__"})


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from cfarena.sdk import client

        return client.SDK_VERSION if name == "__version__" else getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
