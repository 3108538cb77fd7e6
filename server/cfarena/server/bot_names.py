"""What a bot's name may be: one rule for every way a bot gets one (`cfarena bots add`,
`run-tournament --bot NAME`, the web API's registration).

A name is shown in tables, pages, logs and file names, and typed on command
lines: 1 to `MAX_BOT_NAME` characters, ASCII letters, digits, `-`, `_` and `.`.
"""

from __future__ import annotations

import re

MAX_BOT_NAME = 64
BOT_NAME_CHARACTERS = "letters, digits, - _ . only"
_ALLOWED = "A-Za-z0-9_.-"
BOT_NAME_PATTERN = f"^[{_ALLOWED}]+$"  # the web API's description of a name
_NAME = re.compile(f"[{_ALLOWED}]+")


def bot_name_problem(name: str) -> str | None:
    """Why `name` cannot be a bot's name, or None when it can."""
    if not name:
        return "a bot name cannot be empty"
    if len(name) > MAX_BOT_NAME:
        return f"a bot name has at most {MAX_BOT_NAME} characters, this one {len(name)}"
    if not _NAME.fullmatch(name):
        return f"bad bot name {name[:MAX_BOT_NAME]!r} ({BOT_NAME_CHARACTERS})"
    return None
