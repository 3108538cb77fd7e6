"""A match's life in storage: scheduled, leased to the process that plays it (a fencing
token its record must carry), recorded with its result, log and ratings, or aborted.
What writes a schedule is in `scheduling`, what records a played match in
`match_recording`."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from cfarena.server.storage import match_recording, queries, scheduling
from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import storable_text, utc_now
from cfarena.server.storage.models import Match, MatchStatus, SprtTest, SprtVerdict
from cfarena.server.storage.scheduling import same_tournament
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.values import MatchPlan, ScheduledMatch, StoredMatch

_PENDING = (MatchStatus.SCHEDULED, MatchStatus.RUNNING, MatchStatus.ABORTED)


class MatchStore(Sessions):
    """The calls of `Database` that move a match through its life (see the module
    docstring)."""

    def schedule_matches(self, tournament_id: int | None, plans: Iterable[MatchPlan]) -> list[str]:
        """Store the matches not stored yet (by key) and return all their ids, in plan order.

        Match ids are `T<tournament>-<key>`, or the key itself for a match outside
        any tournament. A key already stored with a different seed, table or
        seating is an error (the schedule changed under the same key).
        """
        plans = list(plans)
        for plan in plans:
            scheduling.check_plan(plan)
        with self._session(write=True) as s:
            return scheduling.schedule_matches(s, tournament_id, plans)

    def pending_matches(self, tournament_id: int) -> list[ScheduledMatch]:
        """Matches still to play, in schedule order: scheduled, aborted, and running ones
        (a match left running by a crashed referee is played again)."""
        with self._session() as s:
            return queries.scheduled(s, tournament_id, [m.value for m in _PENDING])

    def pending_match(self, tournament_id: int, match_id: str) -> ScheduledMatch | None:
        """One match of `pending_matches` (None once it is finished, or if it is not one of
        the tournament's): what a queue worker plays for a job."""
        with self._session() as s:
            found = queries.scheduled(s, tournament_id, [m.value for m in _PENDING],
                                      match_id=match_id)
        return found[0] if found else None

    def finished_keys(self, tournament_id: int) -> set[str]:
        with self._session() as s:
            return set(s.scalars(select(Match.key).where(
                Match.tournament_id == tournament_id,
                Match.status == MatchStatus.FINISHED.value,
            )))

    def mark_running(self, match_id: str, *, fresh: bool = False,
                     held: str | None = None) -> str:
        """Mark a match that is not finished running, and return its new lease: the
        fencing token its record must carry (`StoredMatch.lease`) to be stored. Any
        earlier holder's lease is void from now on (its copy will not be stored).

        `fresh`: only a match still `scheduled` (an arena's own new match); one that
        another arena aborted meanwhile is `LeaseLost`.
        `held`: the lease this process played the match under before (its replay after
        the referee's own stall): renewed only if the match still holds it, else
        `LeaseLost` (it was taken for dead meanwhile and the match given to another).

        A match of a bot test that has decided is not started (`LeaseLost`), unless it
        renews the lease it `held`: the match was in play at the decision and may
        finish. The test row is read under a share lock, so a start and the decision
        (`count_sprt_groups`, which holds the row's lock) happen one after the other:
        a start that comes first leaves its match running, which the decided aborts
        (`abort_unheld`) leave alone."""
        lease = secrets.token_hex(16)
        startable = (Match.status == MatchStatus.SCHEDULED.value if fresh
                     else Match.status != MatchStatus.FINISHED.value)
        if held is not None:
            startable = and_(startable, Match.lease == held)
        with self._session(write=True) as s:
            if held is None and _decided_test(s, match_id):
                raise match_recording.LeaseLost(f"match {match_id}: its bot test has decided: "
                                                "not played")
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, startable)
                .values(status=MatchStatus.RUNNING.value, started_at=utc_now(), lease=lease)
            )
            if getattr(done, "rowcount", 0) != 1:
                m = s.get(Match, match_id)
                if fresh and m is not None and m.status == MatchStatus.ABORTED.value:
                    raise match_recording.LeaseLost(f"match {match_id}: aborted elsewhere before "
                                                    f"it started ({m.reason}); not played")
                if held is not None and m is not None:
                    taken = ("revoked" if m.lease is None else "held by another process"
                             if m.lease != held else "spent")
                    raise match_recording.LeaseLost(
                        f"match {match_id}: its lease is {taken} (this process was silent "
                        f"past the limit; the match is {m.status} elsewhere): not played "
                        "again here")
                state = "unknown" if m is None else m.status
                raise StorageError(f"cannot start match {match_id!r}: {state}")
        return lease

    def revoke_lease(self, match_id: str) -> bool:
        """Void the lease of a match still running (its player is taken for dead and the
        match goes to another): whatever the old holder plays is not stored. Whether
        there was one to void."""
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.status == MatchStatus.RUNNING.value,
                       Match.lease.is_not(None))
                .values(lease=None)
            )
            return bool(getattr(done, "rowcount", 0))

    def abort_running_matches(self, reason: str, tournament_id: int | None = None) -> int:
        """Mark the matches still `running` of a tournament (None: those outside any
        tournament) as `aborted` with `reason`; returns how many.

        For a referee starting again after it was killed: nothing will ever finish
        the matches it was running (their leases are revoked: a referee that was only
        frozen, not killed, stores nothing of them). Results, seats and logs are left as they are
        (a running match has none); recording the match later still works (an
        aborted match is recorded afresh).
        """
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(same_tournament(tournament_id),
                       Match.status == MatchStatus.RUNNING.value)
                .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                        finished_at=utc_now(), lease=None)
            )
            return int(getattr(done, "rowcount", 0) or 0)

    def abort_unheld(self, tournament_id: int, reason: str) -> int:
        """Mark the tournament's matches that no process holds `aborted` with `reason`
        (of a decided bot test: nothing will play them): scheduled ones, and running
        ones whose lease was revoked (their player taken for dead). A match in play
        under a lease is left to finish. How many."""
        unheld = or_(Match.status == MatchStatus.SCHEDULED.value,
                     and_(Match.status == MatchStatus.RUNNING.value, Match.lease.is_(None)))
        with self._session(write=True) as s:
            done = s.execute(
                update(Match).where(Match.tournament_id == tournament_id, unheld)
                .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                        finished_at=utc_now())
            )
            return int(getattr(done, "rowcount", 0) or 0)

    def abort_unplayed(self, match_id: str, reason: str) -> bool:
        """Mark match `match_id` `aborted` with `reason` if it is scheduled or running
        (its queue job failed for good, or its bot test decided: nothing will play it
        until it is queued again), its lease revoked with it (a copy played under it is
        not stored); False if it is finished or aborted already."""
        with self._session(write=True) as s:
            done = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.status.in_(
                    [MatchStatus.SCHEDULED.value, MatchStatus.RUNNING.value]))
                .values(status=MatchStatus.ABORTED.value, reason=storable_text(reason),
                        finished_at=utc_now(), lease=None)
            )
            return bool(getattr(done, "rowcount", 0))

    def record_match(self, record: StoredMatch) -> bool:
        """Store a played match, all or nothing, and rate it; False if it was already finished.

        A record with a lease (`StoredMatch.lease`) is stored only if the match still
        holds that lease: else `LeaseLost` (nothing is stored; another process holds
        the match, or it was aborted while this one was silent).

        One transaction writes the result (status finished, or aborted with
        its reason), the seats, the faults, the seat logs, the game log with
        its sha256 and, for a finished match, the Elo update of every seat in
        the match's pool and in "global" with rating history rows. A match that
        is already finished is left alone (the call is a no-op returning
        False), so a retried or duplicated recording never rates a match twice.
        A match recorded before as aborted (or one replayed from its seed) is
        recorded afresh: the faults, seat logs and game log of the earlier
        attempt are replaced by this record's, not added to.
        """
        status = match_recording.recorded_status(record)
        with self._session(write=True) as s:
            return match_recording.record_match(s, record, status)


def _decided_test(s: Session, match_id: str) -> bool:
    """Whether `match_id` is a match of a bot test that has decided (its row read under
    a share lock: the decision waits for this transaction, or this one for it)."""
    verdict = s.scalars(
        select(SprtTest.verdict)
        .join(Match, Match.tournament_id == SprtTest.tournament_id)
        .where(Match.id == match_id)
        .with_for_update(read=True, of=SprtTest)
    ).one_or_none()
    return verdict is not None and verdict != SprtVerdict.CONTINUE.value
