"""Bot tokens: issued once, stored and compared only as SHA-256 hashes."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from cfarena.server.credentials import hash_token, new_token


@dataclass
class TokenRegistry:
    """Maps token hashes to bot names; the tokens themselves are never kept."""

    _by_hash: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, token: str) -> None:
        self.add_hash(name, hash_token(token))

    def add_hash(self, name: str, token_hash: str) -> None:
        self._by_hash[token_hash] = name

    def lookup(self, token: str) -> str | None:
        """The bot a token belongs to, or None (constant-time comparison per entry)."""
        if not token:
            return None
        digest = hash_token(token)
        found: str | None = None
        for known, name in self._by_hash.items():
            if hmac.compare_digest(known, digest):
                found = name
        return found

    def remove_hash(self, token_hash: str) -> None:
        """Forget a token (revoked or rotated away); live connections are the caller's."""
        self._by_hash.pop(token_hash, None)

    def hashes(self) -> dict[str, str]:
        """A copy of the known token hashes and their bots."""
        return dict(self._by_hash)

    async def resolve(self, token: str) -> str | None:
        """The bot a connecting token belongs to (the referee asks once per connection).

        This registry answers from memory; a subclass may ask a database (the
        competition arena does, so that bots registered while it runs can play).
        """
        return self.lookup(token)

    def names(self) -> list[str]:
        return sorted(set(self._by_hash.values()))


class PassUsed(Exception):
    """A one-time seat pass presented a second time."""


@dataclass(eq=False)
class SeatPass:
    """A one-time credential for one bot process the arena started.

    It admits exactly one connection, with capacity 1, which the tournament
    seats in the one match it started the process for. The secret itself is
    never kept, only its hash.
    """

    bot_name: str
    token_hash: str
    used: bool = False
    # set when the process connects (a BotConnection; typed loosely to keep
    # this module free of the connection's imports)
    connection: object | None = None


@dataclass
class PassRegistry:
    """The seat passes a referee has issued and not yet withdrawn."""

    _by_hash: dict[str, SeatPass] = field(default_factory=dict)

    def issue(self, bot_name: str) -> tuple[str, SeatPass]:
        """A fresh pass for one process of `bot_name`: (the secret, its record)."""
        token = new_token()
        seat_pass = SeatPass(bot_name, hash_token(token))
        self._by_hash[seat_pass.token_hash] = seat_pass
        return token, seat_pass

    def redeem(self, token: str) -> SeatPass | None:
        """The pass this secret belongs to, now used; None if it is no pass.

        PassUsed if it was presented before: a pass admits one connection.
        """
        if not token:
            return None
        seat_pass = self._by_hash.get(hash_token(token))
        if seat_pass is None:
            return None
        if seat_pass.used:
            raise PassUsed(seat_pass.bot_name)
        seat_pass.used = True
        return seat_pass

    def withdraw(self, seat_pass: SeatPass) -> None:
        """Forget a pass (its process is gone); a later use is an unknown token."""
        self._by_hash.pop(seat_pass.token_hash, None)

    def __len__(self) -> int:
        return len(self._by_hash)
