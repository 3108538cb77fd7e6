"""The referee: a grpc.aio server that runs matches between connected bots."""

from __future__ import annotations

from cfarena.match.record import ActionRecord, Fault, FaultKind, MatchRecord, TimeControl
from cfarena.server.credentials import hash_token, new_token
from cfarena.server.referee.server import RefereeServer, SeatingTimeout, ShuttingDown
from cfarena.server.referee.tokens import TokenRegistry

__all__ = [
    "ActionRecord",
    "Fault",
    "FaultKind",
    "MatchRecord",
    "RefereeServer",
    "SeatingTimeout",
    "ShuttingDown",
    "TimeControl",
    "TokenRegistry",
    "hash_token",
    "new_token",
]
