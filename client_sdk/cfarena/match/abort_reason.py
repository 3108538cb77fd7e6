"""Why a match was aborted: the one list of the reasons the referee, the tournament
and the arena write (`MatchRecord.reason`, `matches.reason`).

Each reason is stored as its text (the enum is str-valued, and its values are the texts
stored before it existed, so older databases read the same); some carry a detail after
it (`text`). The reasons storage writes itself (an arena declared dead:
`storage.arena_fleet.died_reason`) and the ones a finished match's rules give
(`MatchStatus`, the law's `Outcome`) are not here.
"""

from __future__ import annotations

import enum


class AbortReason(enum.StrEnum):
    # the referee stopped with the match in play (SIGINT/SIGTERM, a cancelled caller)
    SHUTDOWN = "aborted: referee shutting down"
    # a seat's connection ended as the referee came back from a stall of its own: the
    # match is not the bots' to lose (a tournament plays it again; the arena stores it
    # aborted, unrated); with a detail: which seat
    REFEREE_STALLED = "aborted: the referee stalled"
    # a referee bug; with a detail: the exception
    INTERNAL_ERROR = "aborted: internal error"
    # the arena's referee stopped before the match was seated, or was killed with the
    # match running (marked at the next start)
    REFEREE_STOPPED = "referee stopped"
    # the arena scheduled the match but could not mark it started; with a detail: why
    NOT_STARTED = "not started"
    # a tournament's match interrupted while it was being marked running
    INTERRUPTED = "aborted: interrupted before it started"
    # a queue worker gave up the match's job; with a detail: why
    JOB_FAILED = "not played: its job failed for good"

    def text(self, detail: str | None = None) -> str:
        """The stored text: the reason, then the detail (if any) in the reason's own
        form (as it was written before this enum, so that stored texts stay the same)."""
        if detail is None:
            return str(self.value)
        return _DETAIL_FORMS.get(self, "{reason}: {detail}").format(reason=self.value,
                                                                       detail=detail)

    def marks(self, text: str | None) -> bool:
        """Whether a stored reason is this one (with or without a detail)."""
        return text is not None and (text == self.value or text.startswith(
            _DETAIL_FORMS.get(self, "{reason}: {detail}").format(reason=self.value,
                                                                   detail="")))


_DETAIL_FORMS = {
    AbortReason.INTERNAL_ERROR: "{reason} {detail}",
    AbortReason.JOB_FAILED: "{reason} ({detail})",
}
