"""The match law's fault rules, case by case (no processes, no sockets).

Each case is data: a time control, what some seats reply at some of their
decisions (by (seat, turn id); every other decision is answered with move 0
after 5 ms) and what the law must make of it: the faults (seat, kind, turn
id, forfeit), the forfeited seats, the bank a seat is offered at a decision,
and words a fault's detail must hold. Every case also checks the rules that
hold for any match: each seat's turn ids run 1, 2, 3, ...; a faulted decision
is played with the fallback move; a forfeited seat is never asked again and
ranks last; and the record's game log verifies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from cfarena.engine import (
    Move,
    Rules,
    apply_move,
    fallback_move,
    legal_moves,
    needs_decision,
    new_match,
)
from cfarena.match.law import Answer, Decision, Faulted, MatchLaw, Reply, TimedOut, play_out
from cfarena.match.log_format import record_to_log
from cfarena.match.record import FaultKind, MatchRecord, MatchStatus, TimeControl
from cfarena.server.replay.verify import verify_log

RULES = Rules.preset("standard").with_options(rounds="single")
SEED = 1  # 3 players: every seat has a dozen decisions or more
SEATS = ["a", "b", "c"]
ANSWER = Answer(0, 5.0)

Key = tuple[int, int]  # (seat, turn id)


@dataclass(frozen=True)
class Case:
    name: str
    tc: TimeControl
    replies: Mapping[Key, Reply] = field(default_factory=dict)
    before_play: Sequence[tuple[int, FaultKind]] = ()  # faults before the first decision
    faults: Sequence[tuple[int, FaultKind, int, bool]] = ()  # (seat, kind, turn id, forfeit)
    forfeited: Sequence[int] = ()
    banks: Mapping[Key, float] = field(default_factory=dict)  # bank offered at a decision
    detail: str = ""  # in the first fault's detail


TC = TimeControl(move_timeout_ms=1000)
CASES = [
    Case("no faults", TC),
    Case("timeout forfeits with one strike", TC, {(1, 2): TimedOut()},
         faults=[(1, FaultKind.TIMEOUT, 2, True)], forfeited=[1],
         detail="no answer within 1000 ms"),
    Case("strikes: faults before the last cost only the turn",
         TimeControl(1000, strikes=3), {(1, 1): TimedOut(), (1, 2): TimedOut()},
         faults=[(1, FaultKind.TIMEOUT, 1, False), (1, FaultKind.TIMEOUT, 2, False)]),
    Case("strikes: the n-th fault forfeits", TimeControl(1000, strikes=3),
         {(1, 1): TimedOut(), (1, 4): Answer(7, 1.0), (1, 6): TimedOut()},
         faults=[(1, FaultKind.TIMEOUT, 1, False), (1, FaultKind.ILLEGAL, 4, False),
                 (1, FaultKind.TIMEOUT, 6, True)], forfeited=[1]),
    Case("strikes are counted per seat", TimeControl(1000, strikes=2),
         {(0, 1): TimedOut(), (1, 1): TimedOut(), (2, 3): TimedOut()},
         faults=[(0, FaultKind.TIMEOUT, 1, False), (1, FaultKind.TIMEOUT, 1, False),
                 (2, FaultKind.TIMEOUT, 3, False)]),
    Case("an index not offered is illegal", TimeControl(1000, strikes=2),
         {(0, 3): Answer(99, 3.0)}, faults=[(0, FaultKind.ILLEGAL, 3, False)],
         detail="move_index 99 not offered (turn 3 offered"),
    Case("a negative index is illegal", TC, {(2, 1): Answer(-1, 3.0)},
         faults=[(2, FaultKind.ILLEGAL, 1, True)], forfeited=[2]),
    Case("a protocol fault is a strike", TimeControl(1000, strikes=2),
         {(2, 2): Faulted(FaultKind.PROTOCOL, "malformed message", 4.0)},
         faults=[(2, FaultKind.PROTOCOL, 2, False)], detail="malformed"),
    Case("a disconnect forfeits whatever the strikes", TimeControl(1000, strikes=50),
         {(2, 2): Faulted(FaultKind.DISCONNECT, "stream ended")},
         faults=[(2, FaultKind.DISCONNECT, 2, True)], forfeited=[2]),
    Case("a sandbox limit forfeits whatever the strikes", TimeControl(1000, strikes=50),
         {(0, 5): Faulted(FaultKind.LIMIT, "memory limit 512 MiB")},
         faults=[(0, FaultKind.LIMIT, 5, True)], forfeited=[0]),
    Case("a fault before play forfeits at turn 0", TimeControl(1000, strikes=50),
         before_play=[(0, FaultKind.DISCONNECT)],
         faults=[(0, FaultKind.DISCONNECT, 0, True)], forfeited=[0]),
    Case("the bank is drawn down by time over the move timeout",
         TimeControl(100, bank_ms=500), {(0, 1): Answer(0, 300.0), (0, 2): Answer(0, 180.0)},
         banks={(0, 1): 500, (0, 2): 300, (0, 3): 220, (1, 1): 500}),
    Case("an answer within the move timeout leaves the bank", TimeControl(100, bank_ms=500),
         {(1, 1): Answer(0, 100.0)}, banks={(1, 2): 500}),
    Case("the increment is added after every answer in time",
         TimeControl(100, bank_ms=500, increment_ms=50),
         {(0, 1): Answer(0, 50.0), (0, 2): Answer(0, 400.0)},
         banks={(0, 1): 500, (0, 2): 550, (0, 3): 300, (0, 4): 350}),
    Case("an increment without a bank builds one", TimeControl(100, increment_ms=20),
         banks={(2, 1): 0, (2, 2): 20, (2, 3): 40}),
    Case("an answer beyond move timeout + bank times out", TimeControl(100, bank_ms=200),
         {(0, 1): Answer(0, 300.5)}, faults=[(0, FaultKind.TIMEOUT, 1, True)],
         forfeited=[0], detail="no answer within 300 ms"),
    Case("a faulted answer neither draws the bank nor earns the increment",
         TimeControl(100, bank_ms=200, increment_ms=10, strikes=3),
         {(0, 1): Answer(0, 350.0), (0, 2): Answer(0, 300.0)},
         faults=[(0, FaultKind.TIMEOUT, 1, False)],
         banks={(0, 2): 200, (0, 3): 10}),
    # the increment is earned by an answer in time, never counted towards the time the
    # decision itself may take: 320 ms is over 100 + 200 even though 100 + 200 + 50 is not
    Case("a timed-out answer earns no increment and the increment does not extend it",
         TimeControl(100, bank_ms=200, increment_ms=50, strikes=3),
         {(0, 1): Answer(0, 320.0), (0, 2): Answer(0, 20.0)},
         faults=[(0, FaultKind.TIMEOUT, 1, False)],
         banks={(0, 1): 200, (0, 2): 200, (0, 3): 250}, detail="no answer within 300 ms"),
    Case("no answer at all earns no increment",
         TimeControl(100, bank_ms=200, increment_ms=50, strikes=3),
         {(1, 1): TimedOut(), (1, 2): TimedOut()},
         faults=[(1, FaultKind.TIMEOUT, 1, False), (1, FaultKind.TIMEOUT, 2, False)],
         banks={(1, 1): 200, (1, 2): 200, (1, 3): 200}),
    Case("a bank earned by increments can be spent", TimeControl(100, increment_ms=50),
         {(0, 1): Answer(0, 10.0), (0, 2): Answer(0, 140.0)}, banks={(0, 2): 50, (0, 3): 60}),
    Case("a spent bank leaves only the move timeout", TimeControl(100, bank_ms=200, strikes=2),
         {(1, 1): Answer(0, 300.0), (1, 2): Answer(0, 100.5)},
         faults=[(1, FaultKind.TIMEOUT, 2, False)], banks={(1, 2): 0},
         detail="no answer within 100 ms"),
]


@dataclass
class Played:
    record: MatchRecord
    asked: list[Decision]


def play(case: Case) -> Played:
    law = MatchLaw("case", RULES, SEED, SEATS, case.tc, clock=lambda: 1.0)
    asked: list[Decision] = []

    def ask(decision: Decision) -> Reply:
        asked.append(decision)
        return case.replies.get((decision.seat, decision.turn_id), ANSWER)

    for seat, kind in case.before_play:
        law.fault_before_play(seat, kind, f"{kind.value} before play")
    return Played(play_out(law, ask), asked)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault_rules(case: Case) -> None:
    played = play(case)
    rec = played.record
    assert rec.status is MatchStatus.FINISHED
    assert [(f.seat, f.kind, f.turn_id, f.forfeit) for f in rec.faults] == list(case.faults)
    assert rec.forfeited == list(case.forfeited)
    if case.detail:
        assert case.detail in rec.faults[0].detail
    offered = {(d.seat, d.turn_id): d.bank_ms for d in played.asked}
    for key, bank in case.banks.items():
        assert offered[key] == pytest.approx(bank), key
    # the reply every key names was asked for (a case cannot test what never happened)
    assert set(case.replies) <= set(offered)
    _check_invariants(case, played)


def _check_invariants(case: Case, played: Played) -> None:
    rec = played.record
    for seat in range(len(SEATS)):
        ids = [d.turn_id for d in played.asked if d.seat == seat]
        assert ids == list(range(1, len(ids) + 1)), seat  # each seat counts its own
        if seat in rec.forfeited:  # never asked after its forfeiting fault
            gone = next(f.turn_id for f in rec.faults if f.seat == seat and f.forfeit)
            assert ids == list(range(1, gone + 1))
            assert rec.ranks[seat] == max(rec.ranks)
            mine = [a for a in rec.actions if a.seat == seat]
            assert any(a.fallback and not a.decided for a in mine) or gone == ids[-1]
    faulted = {(f.seat, f.turn_id) for f in rec.faults}
    decided = [a for a in rec.actions if a.decided]
    assert len(decided) == len(played.asked)
    for action, decision in zip(decided, played.asked, strict=True):
        assert (action.seat, action.turn_id) == (decision.seat, decision.turn_id)
        assert action.fallback == ((decision.seat, decision.turn_id) in faulted)
        if action.fallback:
            assert action.move == fallback_move(decision.legal_moves).key
    assert verify_log(record_to_log(rec)) == []


def test_moves_not_asked_for_are_forced_or_a_forfeited_seats_fallback() -> None:
    rec = play(CASES[1]).record  # seat 1 forfeits at its turn 2
    state = new_match(RULES, len(SEATS), SEED)
    forced = fallbacks = 0
    for action in rec.actions:
        moves = legal_moves(state)
        assert action.decided == needs_decision(moves) or action.fallback
        if not action.decided:
            assert action.turn_id is None and action.elapsed_ms is None
            if action.fallback:
                assert action.seat == 1 and action.move == fallback_move(moves).key
                fallbacks += 1
            else:
                assert not needs_decision(moves) and action.move == moves[0].key
                forced += 1
        apply_move(state, Move.parse(action.move))
    assert forced and fallbacks


def test_a_decision_is_asked_until_it_is_answered() -> None:
    law = MatchLaw("m", RULES, SEED, SEATS, TC)
    first = law.next_decision()
    assert first is not None and law.next_decision() is first
    law.reply(ANSWER)
    with pytest.raises(RuntimeError):
        law.reply(ANSWER)  # nothing asked since
    second = law.next_decision()
    assert second is not None and second is not first
    with pytest.raises(ValueError):
        law.reply(Answer(0, float("nan")))  # not a time: the decision is still waiting
    assert law.next_decision() is second


def test_an_aborted_match_keeps_what_was_played() -> None:
    law = MatchLaw("m", RULES, SEED, SEATS, TC, clock=lambda: 7.0)
    law.start()
    for _ in range(5):
        assert law.next_decision() is not None
        law.reply(ANSWER)
    rec = law.abort("aborted: referee shutting down")
    assert rec.status is MatchStatus.ABORTED and rec.finished_at == 7.0
    assert len([a for a in rec.actions if a.decided]) == 5 and rec.ranks == []
    assert law.abort("again") is rec and rec.reason == "aborted: referee shutting down"
    log = record_to_log(rec)
    assert log["status"] == "aborted" and verify_log(log) == []


# ------------------------------------------------------- what verification catches
def _log_of(name_start: str) -> dict[str, Any]:
    case = next(c for c in CASES if c.name.startswith(name_start))
    log = record_to_log(play(case).record)
    assert verify_log(log) == []
    return log


def test_verify_catches_a_bank_taken_out_of_the_log() -> None:
    log = _log_of("the increment is added")
    log["time_control"]["bank_ms"] = 0  # seat 0's 400 ms answer at its turn 2 is now late
    problems = verify_log(log)
    assert any(p.startswith("actions[") and ".ms: 400" in p and "no timeout is recorded" in p
               for p in problems), problems


def test_verify_catches_an_increment_taken_out_of_the_log() -> None:
    log = _log_of("a bank earned by increments")
    log["time_control"]["increment_ms"] = 0  # seat 0's 140 ms answer at its turn 2 is now late
    problems = verify_log(log)
    assert any(p.startswith("actions[") and ".ms: 140" in p for p in problems), problems


def test_verify_catches_an_answer_slower_than_the_bank() -> None:
    log = _log_of("the bank is drawn down")
    first = next(i for i, a in enumerate(log["actions"])
                 if (a["seat"], a.get("turn_id")) == (0, 1))
    log["actions"][first]["ms"] = 100 + 500 + 1  # over move timeout + bank
    problems = verify_log(log)
    assert any(p.startswith(f"actions[{first}].ms: 601") for p in problems), problems


@pytest.mark.parametrize(("name_start", "strikes"), [("timeout forfeits", 3),
                                                     ("strikes: faults before", 2)])
def test_verify_catches_a_wrong_strike_count(name_start: str, strikes: int) -> None:
    log = _log_of(name_start)
    log["time_control"]["strikes"] = strikes
    problems = verify_log(log)
    assert any(p.startswith("faults[") and ".forfeit: recorded" in p for p in problems), problems
