"""Bot tokens: issued once, stored and compared only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field


def new_token() -> str:
    """A fresh random token (URL-safe, 32 bytes of entropy)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The SHA-256 hex digest under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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

    def names(self) -> list[str]:
        return sorted(set(self._by_hash.values()))
