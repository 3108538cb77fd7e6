"""The log format: hand-written validation, the JSON Schema, and loading log files."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cfarena.server.replay import LogFileError, load_log_file, validate_log

from .conftest import make_log

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "gamelog.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
Log = dict[str, Any]


def _schema_errors(log: Any) -> list[str]:
    return [
        "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        for e in VALIDATOR.iter_errors(log)
    ]


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("options", [
    {"preset": "standard"}, {"preset": "maltese"}, {"preset": "trains"},
    {"preset": "trains", "spokes": 5, "rounds": "half", "double_blank": 50},
    {"preset": "standard", "rounds": 2, "play_drawn": "may", "tie_break": "zero_rounds"},
])
def test_real_logs_are_valid_for_both(options: dict[str, Any]) -> None:
    from cfarena.server.replay import simulate_log

    for players, timeouts in ((2, ()), (5, (3,))):
        log = simulate_log(options, players, 3, timeouts=timeouts)
        assert validate_log(log) == []
        assert _schema_errors(log) == []


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


# (mutation, the path validate_log names, the path jsonschema names)
MUTATIONS: list[tuple[str, Callable[[Log], None], str, str]] = [
    ("format", _set(["format"], 3), "format", ".format"),
    ("format bool", _set(["format"], True), "format", ".format"),
    ("missing seed", _delete(["seed"]), "$: missing key 'seed'", ""),
    ("extra key", _set(["extra"], 1), "extra: unknown key", ""),
    ("players", _set(["players"], 9), "players", ".players"),
    ("seed type", _set(["seed"], 42), "seed", ".seed"),  # format 2: a string
    ("seed digits", _set(["seed"], "4e2"), "seed", ".seed"),
    ("seed zero", _set(["seed"], "042"), "seed", ".seed"),
    ("seed space", _set(["seed"], " 42"), "seed", ".seed"),
    ("move", _set(["actions", 3, "move"], "9-4 on 3"), "actions[3].move", ".actions[3].move"),
    ("action seat", _set(["actions", 2, "seat"], -1), "actions[2].seat", ".actions[2].seat"),
    ("action key", _set(["actions", 2, "why"], "x"), "actions[2].why", ".actions[2]"),
    ("ms without turn", _delete(["actions", 0, "turn_id"]), "actions[0]", ".actions[0]"),
    ("fault kind", _set(["faults", 0, "kind"], "slow"), "faults[0].kind", ".faults[0].kind"),
    ("event kind", _set(["events", 5, "kind"], "jump"), "events[5].kind", ".events[5].kind"),
    ("event tile", _set(["events", 0, "tile"], "nine"), "events[0].tile", ".events[0].tile"),
    ("play parent", _delete(["events", "PLAY", "parent"]), "events[PLAY]: missing key 'parent'",
     ".events[PLAY]"),
    ("rules start", _set(["rules", "start"], "first"), "rules.start", ".rules.start"),
    ("rules preset", _set(["rules", "preset"], "dutch"), "rules.preset", ".rules.preset"),
    ("rules unknown", _set(["rules", "speed"], 3), "rules.speed: unknown key", ".rules"),
    ("strikes", _set(["time_control", "strikes"], -1), "time_control.strikes",
     ".time_control.strikes"),
    ("totals", _set(["result", "totals", 0], "x"), "result.totals[0]", ".result.totals[0]"),
    ("status", _set(["status"], "won"), "status", ".status"),
    ("deal hands", _set(["deals", 0, "hands", 0, 0], 7), "deals[0].hands[0][0]",
     ".deals[0].hands[0][0]"),
    ("draw-off", _set(["deals", 0, "draw_off", 0], [0]), "deals[0].draw_off[0]",
     ".deals[0].draw_off[0]"),
]


@pytest.mark.parametrize(("name", "mutate", "ours", "theirs"), MUTATIONS,
                         ids=[m[0] for m in MUTATIONS])
def test_malformed_logs_are_named_by_both(
    name: str, mutate: Callable[[Log], None], ours: str, theirs: str
) -> None:
    log = make_log("trains", 3, 7, (2,))  # draw_off start: deals have a draw_off
    play = next(j for j, e in enumerate(log["events"]) if e["kind"] == "play")
    if "PLAY" in ours:
        log["events"][play].pop("parent")
        ours, theirs = ours.replace("PLAY", str(play)), theirs.replace("PLAY", str(play))
    else:
        mutate(log)
    problems = validate_log(log)
    assert any(p.startswith(ours) for p in problems), (ours, problems)
    errors = _schema_errors(log)
    assert errors, f"{name}: jsonschema accepts it"
    assert any(e == theirs or e.startswith(theirs) for e in errors), (theirs, errors)


def test_what_only_the_hand_written_checks_see() -> None:
    log = make_log("standard", 3, 1)
    log["seats"].append("intruder")
    log["events"][3]["tile"] = "9-4"  # tiles are written low end first
    problems = validate_log(log)
    assert any(p.startswith("seats: must have 3 items") for p in problems)
    assert any(p.startswith("events[3].tile: a tile is written low end first") for p in problems)


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
