"""Credentials: bot tokens, made here and kept only as their SHA-256 hashes (referee and
storage), and the web API's admin token, read from its file (`cfarena serve
--admin-token-file`)."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path


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


class AdminTokenError(Exception):
    """The admin token file cannot be used (one line)."""


def read_admin_token(path: Path) -> str:
    """The admin token in `path` (surrounding whitespace dropped): at least 16
    characters. AdminTokenError otherwise."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise AdminTokenError(f"--admin-token-file {path}: no such file") from None
    except (OSError, UnicodeError) as exc:
        raise AdminTokenError(f"--admin-token-file {path}: {exc}") from None
    if len(token) < 16:
        raise AdminTokenError(f"--admin-token-file {path}: the token must be at least 16 "
                              "characters")
    return token
