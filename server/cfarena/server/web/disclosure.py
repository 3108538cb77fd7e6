"""What of a match may be shown to anyone (the web page's security rules, pure).

- A running or pending match shows no seed, no log, no hand (its live view is the
  public information only: `live.py`).
- A match's deal (seed, log, hands) is shown only once every stored match dealt
  with the same seed is over: in a duplicate tournament one deal is played in
  several rotations, and rotation 1's replay would reveal rotation 2's hands.
- "Over" is finished; an aborted match outside any tournament is over too (the
  arena never deals its seed again) once the referee that played it stored its
  record (its game log): a match that another arena marked aborted because its own
  arena went silent (`arena_fleet`: no heartbeat for `--dead-after`) may still be in
  play there (a frozen process, a network cut from the database), and is not over
  until that arena stores it. An aborted tournament match is played again from the
  same seed, so it is not over either.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.server.storage import MatchStatus

# (match id, tournament id, status, whether its game log is stored)
DealRow = tuple[str, int | None, MatchStatus, bool]


def is_over(tournament_id: int | None, status: MatchStatus, logged: bool) -> bool:
    """Whether a match will never be played (again, or on)."""
    if status is MatchStatus.FINISHED:
        return True
    return status is MatchStatus.ABORTED and tournament_id is None and logged


def deal_revealed(deal: Sequence[DealRow]) -> bool:
    """Whether the seed, log and hands of a match may be shown: `deal` lists every
    stored match with its seed (itself included); all of them must be over."""
    return bool(deal) and all(is_over(t, status, logged) for _id, t, status, logged in deal)
