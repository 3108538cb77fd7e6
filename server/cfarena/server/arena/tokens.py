"""The arena's token registry: the database is the truth, so bots registered, rotated
or revoked with `cfarena bots ...` while `serve` runs take effect without a restart.

- A connecting token is looked up in memory (what the last poll of the database
  saw), and on a miss in the database itself, in a worker thread (a bot added a
  moment ago plays at once).
- `Arena` polls `Database.active_tokens()` every `token_poll_s` (1 s) and calls
  `sync`: tokens that are gone (revoked, rotated away) are forgotten, and the
  live connections made with them are closed with UNAUTHENTICATED within that
  poll interval.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc

from cfarena.server.credentials import hash_token
from cfarena.server.referee import TokenRegistry
from cfarena.server.referee.connection import BotConnection
from cfarena.server.storage import Database

log = logging.getLogger("cfarena.arena")

REVOKED = "token revoked"
ROTATED = "token replaced (cfarena bots rotate)"


class LiveTokens(TokenRegistry):
    """Token hashes -> bot names, kept in step with the database."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        # token hash -> when (time.monotonic) a miss found it in the database: a poll
        # that started before then does not know it yet and must not drop it
        self._found_at: dict[str, float] = {}

    async def resolve(self, token: str) -> str | None:
        name = self.lookup(token)
        if name is not None or not token:
            return name
        try:  # registered since the last poll?
            bot = await asyncio.to_thread(self.db.bot_by_token_hash, hash_token(token))
        except Exception as exc:  # the database away: only known tokens get in
            log.warning("cannot look a token up: %s", exc)
            return None
        if bot is None:
            return None
        self._found_at[bot.token_hash] = time.monotonic()
        self.add_hash(bot.name, bot.token_hash)
        return bot.name

    def sync(self, active: dict[str, str], polled_at: float,
             connections: list[BotConnection]) -> list[str]:
        """Make the registry `active` (token hash -> bot name, as the database had it at
        `polled_at`, a time.monotonic() taken before the query) and close every live
        connection whose token is no longer active; one line per closed connection."""
        known = self.hashes()
        newer = {h for h, at in self._found_at.items() if at >= polled_at}
        self._found_at = {h: at for h, at in self._found_at.items() if h in newer}
        active = {**{h: known[h] for h in newer if h in known}, **active}
        for token_hash in known.keys() - active.keys():
            self.remove_hash(token_hash)
        for token_hash, name in active.items():
            if known.get(token_hash) != name:
                self.add_hash(name, token_hash)
        closed: list[str] = []
        still_named = set(active.values())
        for conn in connections:
            if conn.seat_pass is not None or not conn.token_hash or conn.closed:
                continue
            if conn.token_hash in active:
                continue
            why = ROTATED if conn.bot_name in still_named else REVOKED
            conn.kick(grpc.StatusCode.UNAUTHENTICATED, why)
            closed.append(f"bot {conn.bot_name}: connection {conn.conn_id} closed ({why})")
        return closed
