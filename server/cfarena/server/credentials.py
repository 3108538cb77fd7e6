"""Bot credentials: made here, and kept only as their SHA-256 hashes (referee and storage)."""

from __future__ import annotations

import hashlib
import secrets


def new_token() -> str:
    """A fresh random token (URL-safe, 32 bytes of entropy), never starting with "-"
    (a command line would read `--token -abc...` as an option)."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


def hash_token(token: str) -> str:
    """The SHA-256 hex digest under which a token is kept (the token itself never is)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
