"""The competition arena behind `cfarena serve`: a ladder over dial-in bots.

- `ladder`: matchmaking (pure): which connected (bot, version)s play next, where;
- `tokens`: the token registry kept in step with the database (revocation, rotation);
- `config`: `ArenaConfig`, everything serve is configured with;
- `service`: `Arena`, the asyncio loop around the referee (matches, storage, polls).

The online rating itself is `cfarena.server.rating.online` (used by storage, which rates a
match in the transaction that records it).
"""

from __future__ import annotations

from cfarena.server.arena.config import ArenaConfig
from cfarena.server.arena.ladder import Entrant, LadderPolicy, pick_table
from cfarena.server.arena.service import Arena, ArenaStats, ServeResult

__all__ = ["Arena", "ArenaConfig", "ArenaStats", "Entrant", "LadderPolicy", "ServeResult",
           "pick_table"]
