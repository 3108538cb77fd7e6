"""What of a match may be shown to anyone (the web page's security rules, pure).

- A running or pending match shows no seed, no log, no hand (its live view is the
  public information only: `live.py`).
- A match's deal (seed, log, hands) is shown only once every stored match dealt
  with the same seed is over: in a duplicate tournament one deal is played in
  several rotations, and rotation 1's replay would reveal rotation 2's hands.
- "Over" is finished; an aborted match outside any tournament is over too (the
  arena never deals its seed again), while an aborted tournament match is played
  again from the same seed, so it is not.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfarena.server.storage import MatchStatus

DealRow = tuple[str, int | None, MatchStatus]  # (match id, tournament id, status)


def is_over(tournament_id: int | None, status: MatchStatus) -> bool:
    """Whether a match will never be played (again)."""
    if status is MatchStatus.FINISHED:
        return True
    return status is MatchStatus.ABORTED and tournament_id is None


def deal_revealed(deal: Sequence[DealRow]) -> bool:
    """Whether the seed, log and hands of a match may be shown: `deal` lists every
    stored match with its seed (itself included); all of them must be over."""
    return bool(deal) and all(is_over(t, status) for _id, t, status in deal)
