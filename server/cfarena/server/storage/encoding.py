"""How values are stored: canonical JSON and its sha256 (a configuration's identity, a
game log's digest), text both backends accept, and the time (UTC)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def canonical_json(value: Any) -> str:
    """Key-sorted compact JSON, the form hashed for configs and game logs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def canonical_sha256(value: Any) -> str:
    """The sha256 (hex) of `value`'s canonical JSON: the digest stored with a game log."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def config_hash(config: Mapping[str, Any]) -> str:
    """A configuration's identity (a tournament is found again by it)."""
    return canonical_sha256(config)


def storable_text(text: str) -> str:
    """`text` as both backends store it: PostgreSQL refuses NUL characters in text
    and neither encodes lone surrogates, so those become U+FFFD and "?"."""
    text = text.replace("\x00", "\N{REPLACEMENT CHARACTER}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def utc_now() -> datetime:
    return datetime.now(UTC)
