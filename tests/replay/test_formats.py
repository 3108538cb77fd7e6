"""Log formats: format 2 numbers turn ids per seat; format-1 logs still load and verify.

`format1_logs.json` holds two logs written by the format-1 code (before turn
ids counted each seat's own decisions; generated with `simulate_log` at commit
e8f2634, timestamps and decision times then fixed): a 4-player match with
strikes = 2 (two faults that cost a turn, a third that forfeits) and a
3-player match whose seat 0 forfeits at its first fault and is played out by
fallbacks. They stand for the logs already stored in users' databases.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cfarena.match.log_format import LOG_FORMAT
from cfarena.server.replay import build_frames, load_log_file, validate_log, verify_logs
from cfarena.server.replay.verify import verify_log

from .conftest import make_log

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE.parents[1] / "docs" / "gamelog.schema.json").read_text())
Log = dict[str, Any]


@cache
def _format1() -> dict[str, Log]:
    data: dict[str, Log] = json.loads((HERE / "format1_logs.json").read_text())
    return data


def format1(name: str) -> Log:
    return copy.deepcopy(_format1()[name])


FORMAT1 = ["standard-4p-strikes2", "maltese-3p-forfeit"]


def _decisions(log: Log) -> list[tuple[int, int]]:
    return [(a["seat"], a["turn_id"]) for a in log["actions"] if "turn_id" in a]


def test_new_logs_number_turn_ids_per_seat() -> None:
    log = make_log("standard", 4, 11, (3,))
    assert log["format"] == LOG_FORMAT == 2
    decisions = _decisions(log)
    for seat in range(log["players"]):
        mine = [t for s, t in decisions if s == seat]
        assert mine == list(range(1, len(mine) + 1)), seat
    # the numbering really is per seat: every seat has a turn 1
    assert Counter(t for _, t in decisions)[1] == log["players"]
    fault = log["faults"][0]
    assert (fault["seat"], fault["turn_id"]) in decisions


@pytest.mark.parametrize("name", FORMAT1)
def test_format1_logs_still_load_validate_and_verify(name: str, tmp_path: Path) -> None:
    log = format1(name)
    assert log["format"] == 1 and log["faults"]
    # they really are numbered over the match, not per seat
    assert [t for _, t in _decisions(log)] == list(range(1, len(_decisions(log)) + 1))
    assert validate_log(log) == []
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(log)) == []
    assert verify_log(log) == []
    path = tmp_path / "old.json"
    path.write_text(json.dumps(log))
    assert load_log_file(path) == log
    assert verify_logs({"old.json": log}).ok


@pytest.mark.parametrize("name", FORMAT1)
def test_format1_faults_are_drawn_at_their_decision(name: str) -> None:
    log = format1(name)
    frames = build_frames(log)
    shown = [(f.actor, log["actions"][f.action_index].get("turn_id"), x["turn_id"])
             for f in frames for x in f.faults if f.action_index is not None]
    assert len(shown) == len(log["faults"])
    assert all(turn == fault_turn for _, turn, fault_turn in shown)
    assert [actor for actor, _, _ in shown] == [f["seat"] for f in log["faults"]]


def test_format2_faults_are_drawn_at_their_seats_decision() -> None:
    log = make_log("maltese", 3, 21, (5,))
    fault = log["faults"][0]
    frames = build_frames(log)
    [frame] = [f for f in frames if f.faults]
    assert frame.action_index is not None
    action = log["actions"][frame.action_index]
    assert (action["seat"], action["turn_id"]) == (fault["seat"], fault["turn_id"])
    # another seat's decision with the same turn id carries no fault
    assert any(s != fault["seat"] and t == fault["turn_id"] for s, t in _decisions(log))


@pytest.mark.parametrize("name", FORMAT1)
def test_a_format1_log_is_checked_by_its_own_numbering(name: str) -> None:
    # renumbered per seat but still claiming format 1: the turn ids are wrong
    log = format1(name)
    counts: Counter[int] = Counter()
    for action in log["actions"]:
        if "turn_id" in action:
            counts[action["seat"]] += 1
            action["turn_id"] = counts[action["seat"]]
    problems = verify_log(log)
    assert any(".turn_id: recorded" in p for p in problems), problems
    # a format-1 fault moved to another seat's decision is caught
    log = format1(name)
    fault = log["faults"][0]
    other = next(a for a in log["actions"]
                 if "turn_id" in a and a["seat"] != fault["seat"] and not a.get("fallback"))
    fault["turn_id"] = other["turn_id"]
    problems = verify_log(log)
    assert any("fallback: no fault of seat" in p for p in problems), problems


def test_a_format2_log_relabelled_as_format1_fails() -> None:
    log = make_log("standard", 4, 11, (3,))
    assert verify_log(log) == []
    log["format"] = 1
    # format 1 wrote the seed as a number: a string seed is a form problem there
    assert validate_log(log) == ["seed: a format-1 seed is an integer, got '11'"]
    log["seed"] = int(log["seed"])
    assert validate_log(log) == []  # the shape is the same...
    problems = verify_log(log)  # ...the numbering is not
    assert any(p.startswith("actions[") and ".turn_id: recorded" in p for p in problems)


def test_a_format2_turn_id_must_be_the_seats_next() -> None:
    log = make_log("standard", 4, 11, (3,))
    i = next(i for i, a in enumerate(log["actions"]) if a.get("turn_id") == 2)
    log["actions"][i]["turn_id"] = 3
    problems = verify_log(log)
    seat = log["actions"][i]["seat"]
    assert any(p.startswith(f"actions[{i}].turn_id: recorded 3, expected 2 (seat {seat}'s")
               for p in problems), problems
