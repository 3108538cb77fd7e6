"""verify: genuine logs pass; every kind of tampering is detected and named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cfarena.engine import Move, Rules, apply_move, legal_moves, new_match
from cfarena.match.log_format import log_seed
from cfarena.server.replay import log_sha256, verify_logs
from cfarena.server.replay.verify import verify_log

from .conftest import CASES, IDS, make_log

Log = dict[str, Any]


def _decision_with_alternative(log: Log, after: int = 10) -> tuple[int, str]:
    """An action index >= `after` where another legal move existed, and that move."""
    state = new_match(Rules.from_options(log["rules"]), log["players"], log_seed(log))
    for i, action in enumerate(log["actions"]):
        moves = legal_moves(state)
        if i >= after and len(moves) > 1 and not action.get("fallback"):
            other = next(m.key for m in moves if m.key != action["move"])
            return i, other
        apply_move(state, Move.parse(action["move"]))
    raise AssertionError("no decision with an alternative")


def _change_move(log: Log) -> str:
    i, other = _decision_with_alternative(log)
    log["actions"][i]["move"] = other
    return f"actions[{i}].move: changed"


def _change_seat(log: Log) -> str:
    i = len(log["actions"]) // 3
    log["actions"][i]["seat"] = (log["actions"][i]["seat"] + 1) % log["players"]
    return f"actions[{i}].seat: changed"


def _change_total(log: Log) -> str:
    log["result"]["totals"][1] += 5
    return "result.totals[1]: recorded"


def _change_score(log: Log) -> str:
    log["result"]["round_scores"][0][0] += 1
    return "result.round_scores[0][0]: recorded"


def _change_rank(log: Log) -> str:
    ranks = log["result"]["ranks"]
    worst = ranks.index(max(ranks))
    ranks[worst] = 1
    return f"result.ranks[{worst}]: recorded"


def _change_hand(log: Log) -> str:
    hands = log["deals"][1]["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    return "deals[1].hands[0][0]: recorded"


def _change_boneyard(log: Log) -> str:
    bone = log["deals"][0]["boneyard"]
    bone[0], bone[-1] = bone[-1], bone[0]
    return "deals[0].boneyard[0]: recorded"


def _change_event(log: Log) -> str:
    j = next(j for j, e in enumerate(log["events"]) if j > 40 and e["kind"] == "play")
    tile = log["events"][j]["tile"]
    log["events"][j]["tile"] = "0-0" if tile != "0-0" else "0-1"
    return f"events[{j}].tile: recorded"


def _change_hidden_draw(log: Log) -> str:
    j = next(j for j, e in enumerate(log["events"]) if j > 40 and e["kind"] == "draw")
    tile = log["events"][j]["tile"]
    log["events"][j]["tile"] = "0-0" if tile != "0-0" else "0-1"
    return f"events[{j}].tile: recorded"


def _change_seed(log: Log) -> str:
    log["seed"] = str(int(log["seed"]) + 1)  # format 2: a decimal string
    return "seed: the recorded deals are not those of seed"


def _remove_action(log: Log) -> str:
    del log["actions"][25]
    return "actions: removed before actions[25]"


def _remove_last_action(log: Log) -> str:
    log["actions"].pop()
    return "actions: the log says finished but its moves do not end the match"


def _add_action(log: Log) -> str:
    log["actions"].insert(30, dict(log["actions"][30]))
    return "actions[30]: added"


def _append_action(log: Log) -> str:
    log["actions"].append({"seat": 0, "move": "pass"})
    return f"actions[{len(log['actions']) - 1}]: added"


TAMPERINGS: dict[str, Callable[[Log], str]] = {
    "move": _change_move,
    "seat": _change_seat,
    "total": _change_total,
    "round score": _change_score,
    "rank": _change_rank,
    "dealt hand": _change_hand,
    "boneyard": _change_boneyard,
    "event": _change_event,
    "hidden draw": _change_hidden_draw,
    "seed": _change_seed,
    "removed action": _remove_action,
    "removed last action": _remove_last_action,
    "added action": _add_action,
    "appended action": _append_action,
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_untouched_logs_verify(case: tuple[str, int, int, tuple[int, ...]]) -> None:
    log = make_log(*case)
    assert verify_log(log) == []
    report = verify_logs({"a.json": log})
    assert report.ok and report.lines()[0].startswith("OK    a.json")


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[6]], ids=[IDS[0], IDS[3], IDS[6]])
@pytest.mark.parametrize("kind", list(TAMPERINGS))
def test_tampering_is_detected_and_named(
    case: tuple[str, int, int, tuple[int, ...]], kind: str
) -> None:
    log = make_log(*case)
    expected = TAMPERINGS[kind](log)
    problems = verify_log(log)
    assert problems, f"{kind}: not detected"
    assert any(p.startswith(expected) for p in problems), (expected, problems)
    report = verify_logs({"x.json": log})
    assert not report.ok
    assert report.failed[0].name == "x.json"
    assert any(line.strip().startswith(f"- {expected}") for line in report.lines())


def test_a_changed_event_is_blamed_on_the_event_not_the_action() -> None:
    log = make_log("standard", 4, 11, (3,))
    expected = _change_event(log)
    problems = verify_log(log)
    assert problems[0].startswith(expected) and "changed" in problems[0]
    assert not any(".move: changed" in p for p in problems)


def test_faults_and_forfeits_must_match_the_actions() -> None:
    base = make_log("maltese", 3, 21, (5,))
    fault = base["faults"][0]
    log = make_log("maltese", 3, 21, (5,))
    log["faults"].clear()
    problems = verify_log(log)
    assert any(p.startswith("actions[") and ".fallback: no fault" in p for p in problems)
    log = make_log("maltese", 3, 21, (5,))
    log["result"]["forfeited"] = []
    log["result"]["ranks"] = verify_log_ranks_without_forfeit(log)
    assert any(p.startswith("result.forfeited") for p in verify_log(log))
    log = make_log("maltese", 3, 21, (5,))
    log["faults"][0]["forfeit"] = False
    assert any(p.startswith("faults[0].forfeit") for p in verify_log(log))
    log = make_log("maltese", 3, 21, (5,))
    i = next(i for i, a in enumerate(log["actions"])
             if (a["seat"], a.get("turn_id")) == (fault["seat"], fault["turn_id"]))
    del log["actions"][i]["fallback"]
    problems = verify_log(log)
    assert any(p.startswith(f"faults[0].turn_id: turn {fault['turn_id']} of seat "
                            f"{fault['seat']} was answered") for p in problems)


def verify_log_ranks_without_forfeit(log: Log) -> list[int]:
    from cfarena.engine import rank_seats
    from cfarena.engine.rules import TieBreak

    return list(rank_seats(log["result"]["round_scores"], TieBreak.ZERO_ROUNDS))


def test_seat_names_are_covered_by_the_stored_digest() -> None:
    log = make_log("trains", 2, 31)
    digest = log_sha256(log)
    assert verify_logs({"m": log}, {"m": digest}).ok
    log["seats"] = list(reversed(log["seats"]))  # re-simulation cannot see this
    assert verify_log(log) == []
    report = verify_logs([log], {log["match_id"]: digest})
    assert not report.ok
    assert report.failed[0].problems[0].startswith("sha256: ")


def test_report_covers_several_logs_and_malformed_ones() -> None:
    good = make_log("standard", 2, 12)
    bad = make_log("standard", 2, 12)
    bad["actions"][5]["move"] = "banana"
    report = verify_logs({"good.json": good, "bad.json": bad, "odd.json": [1, 2]})
    assert [v.ok for v in report.verdicts] == [True, False, False]
    assert any(p.startswith("form: actions[5].move") for p in report.verdicts[1].problems)
    assert any("actions[5].move" in p and "not a move" in p for p in report.verdicts[1].problems)
    assert report.lines()[-1] == "1 of 3 log(s) genuine"
    assert report.to_dict()["ok"] is False
