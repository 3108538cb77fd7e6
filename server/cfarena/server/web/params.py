"""The path and query parameters of the pages and the API, as the database can take
them: a malformed one is refused with 422 before any query (PostgreSQL refuses a NUL
in text and an integer beyond its column's range with an error that would otherwise
read as "the database is not available"). Ids, names and pools never hold control
characters; a tournament id is a 32-bit integer (`storage.models`: its column is
INTEGER, 32 bits on PostgreSQL)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

PRINTABLE = r"^[^\x00-\x1f\x7f]+$"  # no NUL, no other control character
MAX_TEXT = 1000  # characters: far beyond any id, name or pool the arena makes
INT32_MAX = 2**31 - 1

MatchId = Annotated[str, Path(pattern=PRINTABLE, max_length=MAX_TEXT)]
BotName = Annotated[str, Path(pattern=PRINTABLE, max_length=MAX_TEXT)]
TournamentId = Annotated[int, Path(ge=0, le=INT32_MAX)]
SprtTestId = Annotated[int, Path(ge=0, le=INT32_MAX)]
PoolQuery = Annotated[str | None, Query(pattern=PRINTABLE, max_length=MAX_TEXT)]
BotQuery = Annotated[str | None, Query(pattern=PRINTABLE, max_length=MAX_TEXT)]
