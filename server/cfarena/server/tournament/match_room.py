"""One match of a tournament, in its room: fresh processes for its seats, played,
its faults explained, stored, and the processes let go."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cfarena.engine import Rules
from cfarena.match.abort_reason import AbortReason
from cfarena.match.bot_ids import wire_match_id
from cfarena.server.referee import FaultKind, MatchRecord, RefereeServer, TimeControl
from cfarena.server.sandbox.failure_lines import hints, without_hint
from cfarena.server.storage import (
    LeaseLost,
    MatchStatus,
    ScheduledMatch,
    SeatLog,
    StorageError,
    StoredMatch,
)
from cfarena.server.storage.match_writer import MatchWriter, is_outage, to_stored
from cfarena.server.tournament.pool import BotPool
from cfarena.server.tournament.warm_processes import WarmBot

log = logging.getLogger("cfarena.tournament")

_GENERIC_DISCONNECTS = ("stream ended", "stream cancelled")
STALL_REPLAYS = 3  # plays of a match the referee's stalls voided, at most
_EXIT_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class MatchRoom:
    """Where a tournament's matches are played, one `play` each: its referee, its pool
    of warm bot processes and its writer to storage."""

    server: RefereeServer
    pool: BotPool
    writer: MatchWriter
    time_control: TimeControl
    tournament_id: int
    log_dir: Path | None

    async def play(self, match: ScheduledMatch, seat_bots: list[str]) -> MatchRecord:
        """One match: fresh processes for its seats, played, explained, stored, stopped.
        A match the referee's own stall voided (`AbortReason.REFEREE_STALLED`) is played again from
        its seed with fresh processes (up to STALL_REPLAYS times; then stored aborted)."""
        attempt = 1
        held: str | None = None  # the lease of the voided attempt: the replay renews it
        while True:
            last = attempt >= STALL_REPLAYS
            record, held = await self._play_once(match, seat_bots, held, keep_voided=last)
            if last or not _voided(record):
                return record
            log.warning("match %s: %s; playing it again", match.key, record.reason)
            for name in seat_bots:
                self.pool.add_demand(name)
            attempt += 1

    async def _play_once(self, match: ScheduledMatch, seat_bots: list[str],
                         held: str | None, keep_voided: bool) -> tuple[MatchRecord, str]:
        """One attempt; its record and the lease it was played under."""
        pool = self.pool
        # all seats at once: each waits for its process to be forked (or started) and
        # to connect
        takes = [asyncio.ensure_future(pool.take(name, match.seed)) for name in seat_bots]
        try:
            warms = list(await asyncio.gather(*takes))
        except BaseException:
            for take in takes:
                take.cancel()
            taken = await asyncio.gather(*takes, return_exceptions=True)
            await asyncio.gather(*(pool.release(w) for w in taken if isinstance(w, WarmBot)),
                                 return_exceptions=True)
            raise
        for name in set(seat_bots):
            pool.begin(name, match.seed)
        try:
            return await self._run_seated(match, seat_bots, warms, held, keep_voided)
        finally:
            for name in set(seat_bots):
                pool.end(name, match.seed)

    async def _run_seated(self, match: ScheduledMatch, seat_bots: list[str],
                          warms: list[WarmBot], held: str | None,
                          keep_voided: bool) -> tuple[MatchRecord, str]:
        try:
            lease = await _mark_running(self.writer, match.id, held)
        except BaseException as exc:  # not played here (its lease was taken): stopped unused
            if isinstance(exc, LeaseLost):
                self.writer.say(str(exc))
            await asyncio.gather(*(self.pool.release(w) for w in warms),
                                 return_exceptions=True)
            raise
        handed: list[MatchRecord] = []
        wire_id = wire_match_id(match.seed, match.key)
        try:
            record = await self.server.run_match(
                wire_id, Rules.from_options(match.rules), match.seed, seat_bots,
                self.time_control, tournament_id=self.tournament_id, key=match.key,
                on_record=handed.append,
                connections=[w.connection for w in warms if w.connection is not None],
            )
        except BaseException:
            # cut short (Ctrl-C, a failure elsewhere): store what was played as aborted
            for warm in warms:
                warm.process.kill()
            if handed:
                handed[0].match_id = match.id
                with contextlib.suppress(Exception):
                    self._store(handed[0], warms, lease)
            raise
        record.match_id = match.id
        try:
            await _settle(warms, record)
            await _let_exit(warms)
            await asyncio.gather(*(self.pool.release(w) for w in warms))
        finally:  # a Ctrl-C now still stores the match: it is played
            if keep_voided or not _voided(record):
                self._store(record, warms, lease)
        return record, lease

    def _store(self, record: MatchRecord, warms: Sequence[WarmBot], lease: str) -> None:
        """Queue the match, with each seat's captured output, for storing under `lease`
        (and write the output to `log_dir`); the writer keeps retrying while the
        database is away."""
        stored = to_stored(record, lease)
        for seat, warm in enumerate(warms):
            process = warm.process
            stored.seat_logs.append(SeatLog(seat, process.output.text(), process.output.total,
                                            seat_end(record, seat, warm)))
            if self.log_dir is not None:
                # named by the match id (T<tournament>-<key>): tournaments never collide
                write_seat_log(self.log_dir / f"{record.match_id}-seat{seat}-{warm.bot}.log",
                               process.output.text())
        self.writer.submit(stored)


def seat_end(record: MatchRecord, seat: int, warm: WarmBot) -> str:
    """How a seat's process ended, in one line (then the arena's hint, a line of its
    own, where one was given): why its bot was given up, the limit it breached, the
    fault that forfeited the seat ("timeout at turn 5: ..."; not what the process
    printed afterwards; "; stopped after the match" if it had to be), how it exited by
    itself, or "stopped after the match". A disconnect whose process exited by itself
    keeps the hint its exit gave, which the fault's public detail goes without
    (`_settle`)."""
    if warm.written_off:
        return warm.written_off
    if warm.process.breach:
        return warm.process.breach
    ended = [f for f in record.faults if f.seat == seat and f.forfeit]
    if ended:
        fault = ended[0]
        when = f"at turn {fault.turn_id}" if fault.turn_id else "before its first turn"
        stopped = "" if warm.process.exited_by_itself else "; stopped after the match"
        told = hints(warm.process.exit_summary()) \
            if fault.kind is FaultKind.DISCONNECT and warm.process.exited_by_itself else []
        return "\n".join([f"{fault.kind.value} {when}: {fault.detail}{stopped}", *told])
    if warm.process.exited_by_itself:
        return warm.process.exit_summary()
    return "stopped after the match"


_unwritable_log_dirs: set[Path] = set()


def write_seat_log(path: Path, text: str) -> None:
    """Write a seat's output into --log-dir. A file that cannot be written whole (a full
    disk, say) is removed rather than left empty or cut short, and the first such failure
    in a directory is reported in one warning line: the output is stored in the database
    all the same (`cfarena show MATCH --logs`)."""
    try:
        path.write_text(text)
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        if path.parent not in _unwritable_log_dirs:
            _unwritable_log_dirs.add(path.parent)
            log.warning("--log-dir %s: cannot write %s (%s); seat output is still stored "
                        "(cfarena show MATCH --logs); later failures there are not reported",
                        path.parent, path.name, exc.strerror or exc)


def _voided(record: MatchRecord) -> bool:
    """Whether the referee's own stall voided the match (see MatchRunner.run)."""
    return record.status is MatchStatus.ABORTED and AbortReason.REFEREE_STALLED.marks(
        record.reason)


async def _mark_running(writer: MatchWriter, match_id: str, held: str | None) -> str:
    """Mark the match running in a worker thread, retried with back-off while the database
    is away, and return its lease: a database that is locked or away delays this match,
    never the referee's loop, on which the other matches' deadlines run. Interrupted, it
    waits for the call in flight to end (at most the busy timeout) and queues the match
    as aborted."""
    backoff = writer.backoff()
    while True:
        call = asyncio.ensure_future(writer.call(
            functools.partial(writer.db.mark_running, held=held), match_id))
        try:
            return await asyncio.shield(call)
        except StorageError as exc:
            if not is_outage(exc):
                raise
        except BaseException:  # interrupted while the call may still mark it running
            with contextlib.suppress(BaseException):
                await call
            writer.submit(_not_started(match_id))
            raise
        try:
            await backoff.wait()
        except BaseException:
            writer.submit(_not_started(match_id))
            raise


def _not_started(match_id: str) -> StoredMatch:
    """The record of a match interrupted before it started (it may be marked running)."""
    return StoredMatch(match_id, status=MatchStatus.ABORTED,
                       reason=AbortReason.INTERRUPTED.text())


async def _settle(warms: Sequence[WarmBot], record: MatchRecord) -> None:
    """Give the processes of disconnected seats a moment to exit, then say why they did.
    A disconnect's detail is public (the web page shows it): it goes without the arena's
    hint for a missing path, which names the organiser's paths (the seat's log, `seat_end`,
    and the terminal keep it)."""
    lost = {f.seat for f in record.faults if f.kind is FaultKind.DISCONNECT}
    for seat in lost:
        process = warms[seat].process
        if process.returncode is None and not warms[seat].written_off:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1.0)
    for index, fault in enumerate(record.faults):
        warm = warms[fault.seat]
        process = warm.process
        if fault.kind is not FaultKind.DISCONNECT:
            continue
        detail = fault.detail  # a written-off seat's: why its bot was given up
        if not process.breach and not warm.written_off and process.returncode is not None \
                and detail in _GENERIC_DISCONNECTS:
            detail = f"bot process {process.exit_summary(hint=False)}"
        record.faults[index] = dataclasses.replace(fault, detail=without_hint(detail))


async def _let_exit(warms: Sequence[WarmBot]) -> None:
    """End each seat's stream once its MatchEnd is written, and give its process a
    moment to read it and exit by itself (it is killed after that anyway)."""
    for warm in warms:
        if warm.connection is not None:
            warm.connection.retire()
    waits = [w.process.wait() for w in warms
             if not w.written_off and w.process.returncode is None]
    if waits:
        gathered = asyncio.gather(*waits)
        # cut short (a worker halted mid-match): its outcome is read, not left to be logged
        gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(gathered, _EXIT_GRACE_S)
