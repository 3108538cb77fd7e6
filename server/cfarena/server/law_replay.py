"""Log verification's half of the match law: replay a log's answers and faults through it.

A fresh `MatchLaw` is started from the log's rules, seed and time control; at
every decision it asks for, the log's next action is its answer (or, for a
fallback action, the recorded fault of that decision is). What the law then
writes (turn ids, which moves are decisions, fallbacks, each fault's forfeit,
the forfeited seats, timeouts for answers later than the time control
allowed) must be what the log records. Moves and seats are the
re-simulation's to check (`gamelog`): where they part from the law's, the
replay stops.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

from cfarena.engine import Rules
from cfarena.server.law import Answer, Decision, Faulted, MatchLaw, Reply
from cfarena.server.match_record import ActionRecord, FaultKind, TimeControl

_MAX_REPORTED = 5


def per_seat_turn_ids(log: Mapping[str, Any]) -> bool:
    """Whether a log numbers turn ids per seat (format 2 on) or over the match (format 1)."""
    return log.get("format") != 1


def time_control_of(log: Mapping[str, Any]) -> TimeControl:
    """A log's time control (the defaults for what is missing or not an integer)."""
    raw = log.get("time_control")
    tc = raw if isinstance(raw, dict) else {}
    defaults = TimeControl()

    def value(name: str) -> int:
        v = tc.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 \
            else int(getattr(defaults, name))

    return TimeControl(value("move_timeout_ms"), value("bank_ms"), value("increment_ms"),
                       value("strikes"))


class _Stop(Exception):
    """The log parts from the law in a way the re-simulation reports: replay no further."""


class _Replay:
    def __init__(self, log: Mapping[str, Any], rules: Rules, seed: int) -> None:
        raw_actions = log.get("actions")
        self.actions = [a if isinstance(a, dict) else {}
                        for a in (raw_actions if isinstance(raw_actions, list) else [])]
        raw_faults = log.get("faults")
        self.faults = [f if isinstance(f, dict) else {}
                       for f in (raw_faults if isinstance(raw_faults, list) else [])]
        players = log.get("players")
        seats = [str(s) for s in range(players if isinstance(players, int) else 0)]
        self.law = MatchLaw(str(log.get("match_id", "")), rules, seed, seats,
                            time_control_of(log), clock=lambda: 0.0,
                            per_seat_turn_ids=per_seat_turn_ids(log))
        self.problems: list[str] = []
        self.checked = 0  # actions compared so far
        self.unread = dict(enumerate(self.faults))  # faults not yet matched to a decision
        self.done = False  # the replay reached the end of the log's actions

    def run(self) -> None:
        law = self.law
        law.start()
        for k, f in list(self.unread.items()):
            if f.get("turn_id") == 0:
                del self.unread[k]
                if not 0 <= _seat(f) < len(self.law.record.seat_bots):
                    self.problems.append(f"faults[{k}].seat: no seat {f.get('seat')!r}")
                elif law.fault_before_play(_seat(f), _kind(f), str(f.get("detail", ""))) is None:
                    self.problems.append(f"faults[{k}]: seat {f.get('seat')} had already "
                                         "forfeited")
                else:
                    self._compare_forfeit(k, f)
        while len(self.problems) < _MAX_REPORTED:
            decision = law.next_decision()
            self._compare_applied()
            if decision is None or self.checked >= len(self.actions):
                self.done = self.checked >= len(self.actions)
                return
            self._replay_decision(decision)

    def _replay_decision(self, decision: Decision) -> None:
        i, action = self.checked, self.actions[self.checked]
        path, seat = f"actions[{i}]", decision.seat
        if action.get("seat") != seat:
            raise _Stop
        recorded_turn = action.get("turn_id")
        if "turn_id" not in action:
            self.problems.append(f"{path}: seat {seat} chose among several moves but no "
                                 "decision (turn_id) is recorded and it had not forfeited")
        elif recorded_turn != decision.turn_id:
            whose = f" (seat {seat}'s decision {decision.turn_id})" \
                if self.law.per_seat_turn_ids else ""
            self.problems.append(f"{path}.turn_id: recorded {recorded_turn!r}, "
                                 f"expected {decision.turn_id}{whose}")
        fault_k = self._take_fault(seat, decision.turn_id)
        ms = action.get("ms")
        reply: Reply
        if action.get("fallback") and fault_k is not None:
            f = self.faults[fault_k]
            reply = Faulted(_kind(f), str(f.get("detail", "")), _ms_or_none(ms))
        else:
            if action.get("fallback"):
                self.problems.append(f"{path}.fallback: no fault of seat {seat} at turn "
                                     f"{decision.turn_id}")
            elif fault_k is not None:
                self.problems.append(f"faults[{fault_k}].turn_id: turn {decision.turn_id} of "
                                     f"seat {seat} was answered normally")
            if not action.get("fallback") and _ms_or_none(ms) is None:
                self.problems.append(f"{path}.ms: a decision needs its time in ms, got {ms!r}")
            keys = [m.key for m in decision.legal_moves]
            if action.get("move") not in keys:
                raise _Stop
            # a fallback with no fault to replay (reported above): let its move stand
            elapsed = 0.0 if action.get("fallback") else (_ms_or_none(ms) or 0.0)
            reply = Answer(keys.index(str(action.get("move"))), elapsed)
        fault = self.law.reply(reply)
        if isinstance(reply, Answer) and fault is not None:
            self.problems.append(
                f"{path}.ms: {ms!r} ms is over the {decision.allowed_ms:g} ms the time "
                f"control allowed seat {seat} (move timeout and bank), but no timeout "
                "is recorded")
            raise _Stop
        if fault_k is not None and fault is not None:
            self._compare_forfeit(fault_k, self.faults[fault_k])
        applied = self.law.record.actions[-1]
        if applied.move != action.get("move"):
            self.problems.append(f"{path}.move: a fallback move must be {applied.move!r}, "
                                 f"recorded {action.get('move')!r}")
            raise _Stop
        self.checked += 1

    def _compare_applied(self) -> None:
        """The moves the law applied by itself (forced ones, forfeited seats')."""
        applied = self.law.record.actions
        while self.checked < len(applied) and self.checked < len(self.actions):
            i, ours, theirs = self.checked, applied[self.checked], self.actions[self.checked]
            if theirs.get("seat") != ours.seat:
                raise _Stop
            self._compare_action(f"actions[{i}]", ours, theirs)
            if theirs.get("move") != ours.move:
                if ours.fallback:
                    self.problems.append(f"actions[{i}].move: a fallback move must be "
                                         f"{ours.move!r}, recorded {theirs.get('move')!r}")
                raise _Stop
            self.checked += 1

    def _compare_action(self, path: str, ours: ActionRecord, theirs: dict[str, Any]) -> None:
        forced = not ours.fallback
        if "turn_id" in theirs:
            self.problems.append(
                f"{path}.turn_id: a forced move recorded as a bot decision" if forced else
                f"{path}.turn_id: seat {ours.seat} had forfeited and was not asked")
        if forced and theirs.get("fallback"):
            self.problems.append(f"{path}.fallback: a forced move is not a fallback")
        elif not forced and not theirs.get("fallback"):
            self.problems.append(f"{path}.fallback: seat {ours.seat} had forfeited: its move "
                                 "is the fallback")

    def _take_fault(self, seat: int, turn_id: int) -> int | None:
        for k, f in self.unread.items():
            if f.get("seat") == seat and f.get("turn_id") == turn_id:
                del self.unread[k]
                return k
        return None

    def _compare_forfeit(self, k: int, recorded: dict[str, Any]) -> None:
        ours = self.law.record.faults[-1]
        if bool(recorded.get("forfeit")) != ours.forfeit:
            self.problems.append(f"faults[{k}].forfeit: recorded {recorded.get('forfeit')!r}, "
                                 f"the strikes rule gives {ours.forfeit!r}")


def decision_differences(log: Mapping[str, Any], rules: Rules, seed: int, *,
                         complete: bool) -> list[str]:
    """What the log records of decisions, faults and forfeits that the match law,
    fed the log's answers and faults, does not give. `complete`: the log's moves
    re-simulate without error (else what follows the error is not checked)."""
    replay = _Replay(log, rules, seed)
    with contextlib.suppress(_Stop):
        replay.run()
    problems = replay.problems[:_MAX_REPORTED]
    if not (complete and replay.done) or len(problems) >= _MAX_REPORTED:
        return problems
    for k, f in replay.unread.items():
        problems.append(f"faults[{k}].turn_id: no decision of seat {f.get('seat')} has "
                        f"turn id {f.get('turn_id')!r}")
    result = log.get("result")
    recorded = result.get("forfeited") if isinstance(result, dict) else None
    forfeited = sorted(replay.law.forfeited)
    if recorded != forfeited:
        problems.append(f"result.forfeited: recorded {recorded!r}, the faults give "
                        f"{forfeited!r}")
    return problems[:_MAX_REPORTED]


def _seat(fault: Mapping[str, Any]) -> int:
    seat = fault.get("seat")
    return seat if isinstance(seat, int) and not isinstance(seat, bool) else -1


def _kind(fault: Mapping[str, Any]) -> FaultKind:
    try:
        return FaultKind(fault.get("kind"))
    except ValueError:
        return FaultKind.PROTOCOL  # the schema check names it


def _ms_or_none(ms: Any) -> float | None:
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) \
            or ms < 0:
        return None
    return float(ms)
