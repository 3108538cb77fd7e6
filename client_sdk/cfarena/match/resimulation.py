"""Re-simulation of a game log: replay its moves with the engine and its answers through the law.

`resimulate` replays a log's actions from its seed and rules with the rules
engine and re-derives the events, deals and result a log records.

`decision_differences` is log verification's half of the match law: a fresh
`MatchLaw` is started from the log's rules, seed and time control; at every
decision it asks for, the log's next action is its answer (or, for a fallback
action, the recorded fault of that decision is). What the law then writes
(turn ids, which moves are decisions, fallbacks, each fault's forfeit, the
forfeited seats, timeouts for answers later than the time control allowed)
must be what the log records. Moves and seats are the engine re-simulation's
to check: where they part from the law's, the replay stops.

Comparing a log with its re-simulation is `cfarena.server.replay.verify`'s job.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import (
    IllegalMoveError,
    Move,
    Rules,
    RulesError,
    apply_move,
    legal_moves,
    new_match,
    rank_seats,
)
from cfarena.engine.dealing import deal_round
from cfarena.engine.state import MatchState
from cfarena.match.law import Answer, Decision, Faulted, MatchLaw, Reply
from cfarena.match.log_format import deal_to_dict, event_to_dict, log_seed
from cfarena.match.record import ActionRecord, FaultKind, TimeControl


class LogError(ValueError):
    """A log that cannot be re-simulated (names the JSON path at fault)."""


@dataclass(frozen=True, slots=True)
class Resimulation:
    """The state after replaying a log's actions, and its derived documents.

    `spans[i]` is the slice of `events` produced by `actions[i]`.
    """

    state: MatchState
    events: list[dict[str, Any]]
    deals: list[dict[str, Any]]
    result: dict[str, Any]
    spans: list[tuple[int, int]] = field(default_factory=list)


def start_match(log: Mapping[str, Any]) -> MatchState:
    """A new match from a log's rules, players and seed (LogError naming what is wrong)."""
    try:
        rules = Rules.from_options(log["rules"])
        return new_match(rules, int(log["players"]), log_seed(log))
    except (KeyError, TypeError, ValueError, AttributeError, RulesError) as exc:
        raise LogError(f"rules/players/seed: cannot start the match: {exc}") from exc


@dataclass(frozen=True, slots=True)
class LoggedMove:
    """One action of a log as its re-simulation meets it, before its move is applied."""

    index: int  # in the log's "actions"
    action: Mapping[str, Any]
    move: Move
    offered: tuple[Move, ...]  # the legal moves there, in the order a Turn offers them


def logged_moves(log: Mapping[str, Any], state: MatchState) -> Iterator[LoggedMove]:
    """The actions of `log`, each checked against `state` as it stands when it is met
    (the seat to move; a move that parses and is legal there) and yielded with the
    moves offered there: what a seat was asked at a decision (the match law offers
    `legal_moves`). The caller applies each move (`apply_move(state, step.move)`)
    before asking for the next; a state halted at a round's end (`halt_at_round_end`)
    has its next round started first. LogError, naming the JSON path, at the first
    action that cannot be replayed."""
    actions = log.get("actions", [])
    for i, action in enumerate(actions if isinstance(actions, list) else []):
        path = f"actions[{i}]"
        if state.round_over and not state.is_over:
            state.start_next_round()
        if state.is_over:
            raise LogError(f"{path}: the match was already over (an action was added?)")
        seat = action.get("seat") if isinstance(action, dict) else None
        if seat != state.current_seat:
            raise LogError(
                f"{path}.seat: seat {seat} acted but seat {state.current_seat} was to move")
        offered = legal_moves(state)
        try:
            move = Move.parse(str(action.get("move")))
        except ValueError as exc:
            raise LogError(f"{path}.move: {exc}") from exc
        if move not in offered:
            illegal = IllegalMoveError(move, f"{move.key} is not legal here")
            raise LogError(f"{path}.move: {illegal}")
        yield LoggedMove(i, action, move, offered)


def replay_moves(log: Mapping[str, Any]) -> tuple[Resimulation, LogError | None]:
    """Re-simulate as far as the actions allow; the (partial) result and the error, if any."""
    state = start_match(log)
    spans: list[tuple[int, int]] = []
    error: LogError | None = None
    try:
        for step in logged_moves(log, state):
            start = len(state.events)
            apply_move(state, step.move)
            spans.append((start, len(state.events)))
    except LogError as exc:
        error = exc
    result_doc = log.get("result")
    forfeited = list(result_doc.get("forfeited", [])) if isinstance(result_doc, dict) else []
    round_scores = [list(r.scores) for r in state.round_outcomes]
    totals = [sum(r[s] for r in round_scores) for s in range(state.players)]
    ranks: list[int] = []
    if state.outcome is not None:
        ranks = list(
            rank_seats(round_scores, state.rules.tie_break, forfeited)
            if forfeited
            else state.outcome.ranks
        )
    result = {
        "round_scores": round_scores, "totals": totals, "ranks": ranks, "forfeited": forfeited
    }
    sim = Resimulation(
        state=state,
        events=[event_to_dict(e) for e in state.events],
        deals=[deal_to_dict(d) for d in state.deals],
        result=result,
        spans=spans,
    )
    return sim, error


def resimulate(log: Mapping[str, Any]) -> Resimulation:
    """Replay a log's actions from its seed and rules with the engine (LogError if impossible)."""
    sim, error = replay_moves(log)
    if error is not None:
        raise error
    return sim


def seeded_deal(state: MatchState, round_index: int) -> dict[str, Any]:
    """The deal of round `round_index` that the match's seed gives (JSON form)."""
    return deal_to_dict(deal_round(state.rules, state.deal_seed, round_index).to_deal())


# ------------------------------------------------- the law fed the log
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


class _LawReplay:
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
    replay = _LawReplay(log, rules, seed)
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
