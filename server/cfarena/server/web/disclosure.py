"""What of a match may be shown to anyone (the web page's security rules, pure).

- A running or pending match shows no seed, no log, no hand (its live view is the
  public information only: `live.py`).
- A match's deal (seed, log, hands) is shown only once every stored match dealt
  with the same seed is over: in a duplicate tournament one deal is played in
  several rotations, and rotation 1's replay would reveal rotation 2's hands.
- "Over" is finished; an aborted match outside any tournament is over too (the
  arena never deals its seed again), while an aborted tournament match is played
  again from the same seed, so it is not. Nor is a match another arena marked
  aborted because its own arena stopped beating (`arena_fleet.declared_dead`): that
  arena may only have lost the database (a PostgreSQL restart stops every arena's
  heartbeat) and still be playing it, and its seed would give its players every
  hand. If that arena comes back, it stores the match as finished.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.server.storage import MatchStatus
from cfarena.server.storage.arena_fleet import declared_dead

# (match id, tournament id, status, reason)
DealRow = tuple[str, int | None, MatchStatus, str | None]


def is_over(tournament_id: int | None, status: MatchStatus, reason: str | None = None
            ) -> bool:
    """Whether a match will never be played (again), nor is being played out of sight."""
    if status is MatchStatus.FINISHED:
        return True
    return (status is MatchStatus.ABORTED and tournament_id is None
            and not declared_dead(reason))


def deal_revealed(deal: Sequence[DealRow]) -> bool:
    """Whether the seed, log and hands of a match may be shown: `deal` lists every
    stored match with its seed (itself included); all of them must be over."""
    return bool(deal) and all(is_over(t, status, reason) for _id, t, status, reason in deal)
