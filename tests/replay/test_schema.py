"""The log format: validation against the JSON Schema (one file, agreeing with the Python
types), what the schema cannot say, and loading log files."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cfarena.engine import EventKind, RoundEnd
from cfarena.engine.rules import OPTION_KEYS, PRESETS, Draw, PlayDrawn, Start, TieBreak
from cfarena.match.log_format import LOG_FORMAT, READABLE_FORMATS
from cfarena.sdk.types import FaultKind as WireFaultKind
from cfarena.server.replay import LogFileError, load_log_file, validate_log
from cfarena.server.replay.schema import _LONG_PARTS, log_schema
from cfarena.server.storage.models import FaultKind, MatchStatus

from .conftest import make_log

DOCS_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "gamelog.schema.json"
SCHEMA = log_schema()
Log = dict[str, Any]


def test_the_schema_is_valid_draft_2020_12_and_the_docs_file_is_it() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # docs/gamelog.schema.json is the package's file (a link), not a second copy
    assert json.loads(DOCS_SCHEMA.read_text()) == SCHEMA
    assert DOCS_SCHEMA.resolve() == (
        Path(__file__).resolve().parents[2] / "server" / "cfarena" / "server" / "replay"
        / "gamelog.schema.json"
    )


def _values(enum_type: Any) -> list[Any]:
    return [member.value for member in enum_type]


def test_the_schemas_enums_agree_with_the_python_types() -> None:
    """The schema is the truth for the file; these are the types that write and read it."""
    top, defs = SCHEMA["properties"], SCHEMA["$defs"]
    assert top["format"]["enum"] == list(READABLE_FORMATS)
    assert max(READABLE_FORMATS) == LOG_FORMAT
    assert SCHEMA["if"]["properties"]["format"]["const"] == min(READABLE_FORMATS)
    kinds = defs["fault"]["properties"]["kind"]["enum"]
    assert kinds == _values(FaultKind) == _values(WireFaultKind)
    # a stored log is of a match that ran: every match status but "scheduled"
    ran = {s.value for s in MatchStatus if s is not MatchStatus.SCHEDULED}
    assert sorted(top["status"]["enum"]) == sorted(ran)
    assert defs["event"]["properties"]["kind"]["enum"] == _values(EventKind)
    assert defs["event"]["properties"]["reason"]["enum"] == _values(RoundEnd)
    conditional = [c["if"]["properties"]["kind"]["const"] for c in defs["event"]["allOf"]]
    assert conditional == _values(EventKind)
    rules = defs["rules"]["properties"]
    assert rules["preset"]["enum"] == list(PRESETS)
    assert set(rules) == {"preset", *OPTION_KEYS}
    for key, enum_type in (("start", Start), ("draw", Draw), ("play_drawn", PlayDrawn),
                           ("tie_break", TieBreak)):
        assert rules[key]["enum"] == _values(enum_type), key


@pytest.mark.parametrize("options", [
    {"preset": "standard"}, {"preset": "maltese"}, {"preset": "trains"},
    {"preset": "trains", "spokes": 5, "rounds": "half", "double_blank": 50},
    {"preset": "standard", "rounds": 2, "play_drawn": "may", "tie_break": "zero_rounds"},
])
def test_real_logs_are_valid(options: dict[str, Any]) -> None:
    from cfarena.server.replay import simulate_log

    for players, timeouts in ((2, ()), (5, (3,))):
        log = simulate_log(options, players, 3, timeouts=timeouts)
        assert validate_log(log) == []


def _set(path: list[Any], value: Any) -> Callable[[Log], None]:
    def change(log: Log) -> None:
        target: Any = log
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _delete(path: list[Any]) -> Callable[[Log], None]:
    def change(log: Log) -> None:
        target: Any = log
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


# (name, mutation, the one problem validate_log reports); PLAY: the first play event
MUTATIONS: list[tuple[str, Callable[[Log], None], str]] = [
    ("format", _set(["format"], 3), "format: must be one of 1, 2, got 3"),
    ("format bool", _set(["format"], True), "format: must be one of 1, 2, got True"),
    ("missing seed", _delete(["seed"]), "$: missing key 'seed'"),
    ("extra key", _set(["extra"], 1), "extra: unknown key"),
    ("players", _set(["players"], 9), "players: must be <= 8, got 9"),
    ("a seat beyond the schema's too", _set(["faults", 0, "seat"], 8),
     "faults[0].seat: must be a seat in 0..2, got 8"),
    ("seed type", _set(["seed"], 42),  # format 2: a string
     "seed: must be a decimal integer string such as \"42\", got 42"),
    ("seed digits", _set(["seed"], "4e2"),
     "seed: must be a decimal integer string such as \"42\", got '4e2'"),
    ("seed zero", _set(["seed"], "042"),
     "seed: must be a decimal integer string such as \"42\", got '042'"),
    ("seed 64 bits", _set(["seed"], "9" * 20),
     "seed: must fit a signed 64-bit integer, got 99999999999999999999"),
    ("move", _set(["actions", 3, "move"], "9-4 on 3"),
     "actions[3].move: must be 'A-B@NODE', 'draw' or 'pass', got '9-4 on 3'"),
    ("action seat", _set(["actions", 2, "seat"], -1), "actions[2].seat: must be >= 0, got -1"),
    ("action seat beyond players", _set(["actions", 2, "seat"], 3),
     "actions[2].seat: must be a seat in 0..2, got 3"),
    ("action key", _set(["actions", 2, "why"], "x"), "actions[2].why: unknown key"),
    ("ms without turn", _delete(["actions", 0, "turn_id"]),
     "actions[0]: key 'ms' needs key 'turn_id' too"),
    ("fallback", _set(["actions", 0, "fallback"], False),
     "actions[0].fallback: must be true, got False"),
    ("fault kind", _set(["faults", 0, "kind"], "slow"),
     "faults[0].kind: must be one of timeout, illegal, protocol, disconnect, limit, got 'slow'"),
    ("fault forfeit", _set(["faults", 0, "forfeit"], "yes"),
     "faults[0].forfeit: must be true or false, got 'yes'"),
    ("event kind", _set(["events", 5, "kind"], "jump"),
     "events[5].kind: must be one of round_start, draw_off, centre, play, draw, pass, "
     "round_end, got 'jump'"),
    ("event tile", _set(["events", 0, "tile"], "nine"),
     "events[0].tile: must be a tile 'A-B', got 'nine'"),
    ("event tile high end first", _set(["events", 0, "tile"], "9-4"),
     "events[0].tile: a tile is written low end first, got '9-4'"),
    ("event key of another kind", _set(["events", 0, "node"], 0), "events[0].node: unknown key"),
    ("play parent", _delete(["events", "PLAY", "parent"]), "events[PLAY]: missing key 'parent'"),
    ("rules start", _set(["rules", "start"], "first"),
     "rules.start: must be one of centre_first, holder, draw_off, got 'first'"),
    ("rules preset", _set(["rules", "preset"], "dutch"),
     "rules.preset: must be one of standard, maltese, trains, got 'dutch'"),
    ("rules rounds", _set(["rules", "rounds"], 0),
     "rules.rounds: must be one of full, half, single or an integer in 1..19, got 0"),
    ("rules unknown", _set(["rules", "speed"], 3), "rules.speed: unknown key"),
    ("strikes", _set(["time_control", "strikes"], -1),
     "time_control.strikes: must be >= 0, got -1"),
    ("started_at", _set(["started_at"], "now"), "started_at: must be a number, got 'now'"),
    ("totals", _set(["result", "totals", 0], "x"), "result.totals[0]: must be an integer, got 'x'"),
    ("totals per seat", _set(["result", "totals"], [1, 2]),
     "result.totals: must have 3 items (one per seat), got 2"),
    ("seats per seat", _set(["seats"], ["a", "b", "c", "d"]),
     "seats: must have 3 items (one per seat), got 4"),
    ("status", _set(["status"], "won"),
     "status: must be one of finished, aborted, running, got 'won'"),
    ("deal hands", _set(["deals", 0, "hands", 0, 0], 7),
     "deals[0].hands[0][0]: must be a string, got 7"),
    ("deal hands per seat", _delete(["deals", 0, "hands", 2]),
     "deals[0].hands: must have 3 items (one per seat), got 2"),
    ("draw-off", _set(["deals", 0, "draw_off", 0], [0]),
     "deals[0].draw_off[0]: must have at least 2 items, got 1"),
    ("not an object", _set(["result"], [1]), "result: must be an object, got an array"),
]


@pytest.mark.parametrize(("name", "mutate", "problem"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_malformed_log_is_named_by_path_and_reason(
    name: str, mutate: Callable[[Log], None], problem: str
) -> None:
    log = make_log("trains", 3, 7, (2,))  # draw_off start: deals have a draw_off
    assert validate_log(log) == []
    if "PLAY" in problem:
        play = next(j for j, e in enumerate(log["events"]) if e["kind"] == "play")
        log["events"][play].pop("parent")
        problem = problem.replace("PLAY", str(play))
    else:
        mutate(log)
    assert validate_log(log) == [problem]


def test_every_problem_is_reported_on_one_line_each() -> None:
    log = make_log("standard", 3, 1)
    log["status"] = "won"
    log["faults"] = [{"seat": 9}]
    log["actions"][0]["move"] = "up\nand away"
    problems = validate_log(log)
    assert "status: must be one of finished, aborted, running, got 'won'" in problems
    assert "faults[0].seat: must be a seat in 0..2, got 9" in problems
    assert "faults[0]: missing key 'kind'" in problems
    assert "faults[0]: missing key 'detail'" in problems
    assert all("\n" not in p for p in problems), problems
    assert validate_log([log]) == ["$: must be an object, got an array"]


def test_the_fast_check_leaves_every_verdict_to_jsonschema() -> None:
    """validate_log asks jsonschema_rs first (replay.schema): a value it reads otherwise
    (a tuple), or rejects where jsonschema accepts (NaN), is still
    judged by jsonschema; and jsonschema may skip a long array jsonschema_rs accepts
    only while `[]` is valid in its place and no keyword but `properties` reads it."""
    log = make_log("trains", 3, 7, (2,))
    log["seats"] = tuple(log["seats"])
    assert validate_log(log) == [
        "seats: must be an array, got ('greedy-0', 'greedy-1', 'greedy-2')"]
    log = make_log("trains", 3, 7, (2,))
    log["started_at"] = float("nan")  # a number to jsonschema, not to jsonschema_rs
    assert validate_log(log) == []
    assert set(SCHEMA) - {"properties"} == {
        "$schema", "$id", "title", "description", "$defs",  # annotations and definitions
        "type", "additionalProperties", "required",  # the keys, not their values
        "if", "then", "else"}
    conditional = json.dumps([SCHEMA["if"], SCHEMA["then"], SCHEMA["else"]])
    for key in _LONG_PARTS:
        assert f'"{key}"' not in conditional
        part = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"],
                                                **SCHEMA["properties"][key]})
        assert part.is_valid([])


def test_load_log_file(tmp_path: Path) -> None:
    log = make_log("maltese", 2, 4)
    good = tmp_path / "m.json"
    good.write_text(json.dumps(log))
    assert load_log_file(good) == log
    packed = tmp_path / "m.json.gz"
    packed.write_bytes(gzip.compress(json.dumps(log).encode()))
    assert load_log_file(packed) == log

    def fails(content: str | bytes, match: str, name: str = "bad.json") -> None:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        with pytest.raises(LogFileError, match=match) as info:
            load_log_file(path)
        assert str(path) in str(info.value)

    fails("{\n  'format': 1\n}", r"not a JSON game log \(line 2, column 3")
    fails(b"\xff\xfe\x00", "not UTF-8")
    fails("[1, 2]", r"the JSON is a list, not an object")
    fails('{"events": []}', r"not a cfarena game log \(no 'format' key\)")
    fails('{"format": 3}', r"game log format 3 is not supported \(this version reads "
                           r"formats 1 and 2\)")
    broken = dict(log, players="two")
    fails(json.dumps(broken), r"malformed format-2 game log: players: must be an integer")
    with pytest.raises(LogFileError, match="cannot read"):
        load_log_file(tmp_path / "missing.json")
    assert load_log_file(tmp_path / "bad.json", validate=False)["players"] == "two"
