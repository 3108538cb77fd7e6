"""The shape of a game log (formats 1 and 2): validation against the JSON Schema, loading a file.

`validate_log` checks a log against `gamelog.schema.json` (this package's copy;
docs/gamelog.schema.json links to it: one file is the truth) with the
`jsonschema` library, then checks what a schema cannot say: arrays with one
item per player, seats below the number of players, tiles written low end
first, a seed that fits 64 bits. Each problem is one line, "JSON.path: reason".
It checks the form only; `verify_log` checks the content by re-simulation.

A log of plain JSON values is first checked by `jsonschema_rs` (compiled, some
300 times faster: a match's log in about a millisecond instead of 0.4 s); only
a log it rejects is walked by `jsonschema`, whose errors name the problems. The
two agree on what is valid, but where they differ `jsonschema_rs` is the
stricter (NaN and infinity are no numbers to it, `$` in a pattern does not match
before a final newline, integers are compared exactly), and a stricter "no"
only sends the log the slow way: the problems reported are jsonschema's alone.
The slow way skips the long arrays (actions, events, deals) that `jsonschema_rs`
accepts on their own: jsonschema sees `[]` in their place, which is valid too,
and no other keyword of the schema reads them, so every problem and its path
stay the same.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfarena.match.log_format import READABLE_FORMATS, seed_problem

if TYPE_CHECKING:
    import jsonschema_rs
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

SCHEMA_FILE = "gamelog.schema.json"
_LONG_PARTS = ("actions", "events", "deals")  # top-level arrays of one item per move or event
_PLAIN_JSON = frozenset({dict, list, str, int, float, bool, type(None)})
_TYPE_WORDS = {
    "integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
    "object": "an object", "array": "an array", "null": "null",
}


class LogFileError(ValueError):
    """A file that is not a readable game log (the message says why)."""


@cache
def log_schema() -> dict[str, Any]:
    """The game log's JSON Schema (draft 2020-12), as a dict: the one description of the form."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported on first use: CLI start-up stays fast

    return Draft202012Validator(log_schema())


@cache
def _fast_validator() -> jsonschema_rs.Validator:
    import jsonschema_rs  # imported on first use, like jsonschema

    return jsonschema_rs.validator_for(log_schema())


@cache
def _fast_part_validators() -> dict[str, jsonschema_rs.Validator]:
    """Per long top-level array, a validator of its value alone (beside the schema's $defs)."""
    import jsonschema_rs

    schema = log_schema()
    root = {key: schema[key] for key in ("$schema", "$id", "$defs")}
    return {key: jsonschema_rs.validator_for({**root, **schema["properties"][key]})
            for key in _LONG_PARTS}


def _plain_json(value: Any) -> bool:
    """Whether `value` holds only what `json.loads` makes (dicts with string keys, lists,
    strings, numbers, booleans, null): `jsonschema_rs` reads a tuple as an array, which
    `jsonschema` does not, and a subclass might not convert as its base."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind not in _PLAIN_JSON:
            return False
        if kind is dict:
            if not all(type(key) is str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return True


def _schema_problems(log: Any) -> list[str]:
    if _plain_json(log):
        if _fast_validator().is_valid(log):
            return []
        if isinstance(log, dict):  # jsonschema walks only the parts at fault
            parts = _fast_part_validators()
            log = {key: [] if key in parts and isinstance(value, list)
                   and parts[key].is_valid(value) else value for key, value in log.items()}
    return [p for error in _validator().iter_errors(log) for p in _describe(error)]


def validate_log(log: Any) -> list[str]:
    """Form problems of a log, each "JSON.path: reason" ([] = well-formed).

    Formats 1 and 2 have the same shape but for the seed (a JSON integer in
    format 1, a decimal string in format 2); they also differ in how turn ids
    are numbered, which `verify_log` checks. The path of the whole document is
    `$`; others are written like `actions[3].move`.
    """
    problems = _schema_problems(log)
    if not isinstance(log, dict):
        return problems
    # the checks beyond the schema are the more specific ones: where both name a path
    # ("seed: must fit a signed 64-bit integer", "actions[2].seat: must be a seat in
    # 0..2"), theirs is kept
    beyond = _beyond_schema(log)
    named = {p.partition(": ")[0] for p in beyond}
    return [p for p in problems if p.partition(": ")[0] not in named] + beyond


# ------------------------------------------------------- schema errors, one line each
def _path(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "$"


def _join(base: str, key: str) -> str:
    return key if base == "$" else f"{base}.{key}"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _types(types: str | Sequence[str]) -> str:
    return " or ".join(_TYPE_WORDS.get(t, t) for t in ([types] if isinstance(types, str)
                                                        else types))


def _expect(schema: Any) -> str:
    """What a (small) schema asks for, in words: "one of full, half", "an integer in 1..19"."""
    if not isinstance(schema, dict):
        return "nothing" if schema is False else "anything"
    if "enum" in schema:
        return "one of " + ", ".join(v if isinstance(v, str) else json.dumps(v)
                                     for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    words = _types(schema.get("type", [])) or "a value"
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None or hi is not None:
        words += f" in {'' if lo is None else lo}..{'' if hi is None else hi}"
    return words


def _describe(error: ValidationError) -> Iterator[str]:
    """One line per problem: "path: reason" (the value itself, not its schema, named)."""
    path = _path(list(error.absolute_path))
    kind = error.validator
    value: Any = error.validator_value
    got: Any = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "propertyNames" in error.relative_schema_path:  # `got` is the key, path its object's
        yield f"{_join(path, str(got))}: unknown key"
    elif kind == "required":  # "'seed' is a required property"
        yield f"{path}: missing key {error.message.removesuffix(' is a required property')}"
    elif kind == "additionalProperties":
        for key in got if isinstance(got, dict) else ():
            if key not in schema.get("properties", {}):
                yield f"{_join(path, str(key))}: unknown key"
    elif kind == "dependentRequired":  # "'turn_id' is a dependency of 'ms'"
        needed, _, key = error.message.partition(" is a dependency of ")
        yield f"{path}: key {key} needs key {needed} too"
    elif kind == "type":
        yield f"{path}: must be {_types(value)}, got {_show(got)}"
    elif kind in ("enum", "const"):
        yield f"{path}: must be {_expect(schema)}, got {_show(got)}"
    elif kind == "pattern":
        what = schema.get("title", f"a string matching {value}")
        yield f"{path}: must be {what}, got {_show(got)}"
    elif kind in ("minimum", "maximum"):
        yield f"{path}: must be {'>=' if kind == 'minimum' else '<='} {value}, got {_show(got)}"
    elif kind == "maxLength":
        yield f"{path}: must have at most {value} characters, got {len(got)}"
    elif kind in ("minItems", "maxItems"):
        most = "at least" if kind == "minItems" else "at most"
        yield f"{path}: must have {most} {value} items, got {len(got)}"
    elif kind in ("oneOf", "anyOf"):
        yield f"{path}: must be {' or '.join(_expect(s) for s in value)}, got {_show(got)}"
    else:
        yield f"{path}: {error.message}"


# ------------------------------------------------------- what a schema cannot say
def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dicts(v: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    return ((i, x) for i, x in enumerate(_list(v)) if isinstance(x, dict))


def _beyond_schema(log: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    fmt = log.get("format")
    readable = fmt in READABLE_FORMATS and not isinstance(fmt, bool)
    if readable and "seed" in log and (problem := seed_problem(log)) is not None:
        problems.append(f"seed: {problem}")
    players = log.get("players")
    if not isinstance(players, int) or isinstance(players, bool) or not 2 <= players <= 8:
        return problems

    def per_seat(path: str, v: Any) -> None:
        if isinstance(v, list) and len(v) != players:
            problems.append(f"{path}: must have {players} items (one per seat), got {len(v)}")

    def seat(path: str, v: Any) -> None:
        if isinstance(v, int) and not isinstance(v, bool) and v >= players:
            problems.append(f"{path}: must be a seat in 0..{players - 1}, got {v}")

    def tile(path: str, v: Any) -> None:
        ends = v.split("-") if isinstance(v, str) else []
        if len(ends) == 2 and all(e.isdigit() for e in ends) and int(ends[0]) > int(ends[1]):
            problems.append(f"{path}: a tile is written low end first, got {v!r}")

    per_seat("seats", log.get("seats"))
    for key in ("actions", "faults"):
        for i, item in _dicts(log.get(key)):
            seat(f"{key}[{i}].seat", item.get("seat"))
    for i, e in _dicts(log.get("events")):
        seat(f"events[{i}].seat", e.get("seat"))
        tile(f"events[{i}].tile", e.get("tile"))
        per_seat(f"events[{i}].scores", e.get("scores"))
    for i, d in _dicts(log.get("deals")):
        at = f"deals[{i}]"
        tile(f"{at}.round_double", d.get("round_double"))
        seat(f"{at}.first_seat", d.get("first_seat"))
        seat(f"{at}.centre_seat", d.get("centre_seat"))
        per_seat(f"{at}.hands", d.get("hands"))
        for h, hand in enumerate(_list(d.get("hands"))):
            for j, t in enumerate(_list(hand)):
                tile(f"{at}.hands[{h}][{j}]", t)
        for j, t in enumerate(_list(d.get("boneyard"))):
            tile(f"{at}.boneyard[{j}]", t)
        for key in ("draw_off", "setup_draws"):
            for j, pair in enumerate(_list(d.get(key))):
                if isinstance(pair, list) and len(pair) == 2:
                    seat(f"{at}.{key}[{j}][0]", pair[0])
                    tile(f"{at}.{key}[{j}][1]", pair[1])
    result = log.get("result")
    if isinstance(result, dict):
        for r, row in enumerate(_list(result.get("round_scores"))):
            per_seat(f"result.round_scores[{r}]", row)
        per_seat("result.totals", result.get("totals"))
        if result.get("ranks"):  # empty: the match did not finish
            per_seat("result.ranks", result.get("ranks"))
        for i, s in enumerate(_list(result.get("forfeited"))):
            seat(f"result.forfeited[{i}]", s)
    return problems


# ------------------------------------------------------------------ log files
def _formats(joiner: str = "or") -> str:
    return f" {joiner} ".join(str(f) for f in READABLE_FORMATS)


def read_log_file(path: str | Path, validate: bool = True
                  ) -> Iterator[tuple[str, dict[str, Any] | LogFileError]]:
    """The game logs in a file (`.gz` too), each named, or in its place the
    `LogFileError` saying why that part is not one.

    A file is JSON Lines, a log a line (`cfarena export --tournament`; `export
    MATCH` writes one line), read a line at a time, its logs named PATH:LINE (PATH
    alone for a file of one line); or, when its first line is not JSON by itself,
    one JSON document (an indented log, as older versions exported), named PATH.
    With `validate`, each log's form is checked too (`validate_log`); verification
    callers pass False and report those problems themselves.
    """
    p = Path(path)
    try:
        with gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb") as lines:
            first = lines.readline()
            try:
                json.loads(first)
            except (ValueError, RecursionError):  # not a line of JSON Lines
                yield str(p), _checked_log(first + lines.read(), str(p), validate)
                return
            number, line = 1, first
            while line:
                after = lines.readline()
                if line.strip():
                    name = str(p) if number == 1 and not after else f"{p}:{number}"
                    yield name, _checked_log(line, name, validate, one_line=True)
                number, line = number + 1, after
    except OSError as exc:  # unreadable, or not gzip data behind a .gz name
        yield str(p), LogFileError(f"{p}: cannot read: {exc.strerror or exc}")


def load_log_file(path: str | Path, validate: bool = True, match_id: str | None = None
                  ) -> dict[str, Any]:
    """The game log in a file (`read_log_file`), or with `match_id` the log of that
    match among a JSON Lines file's; `LogFileError` saying why if there is none (a
    file of several logs needs `match_id`)."""
    found: dict[str, Any] | None = None
    for _name, log in read_log_file(path, validate):
        if match_id is not None:
            if not isinstance(log, LogFileError) and log.get("match_id") == match_id:
                return log
            continue
        if found is not None:
            raise LogFileError(f"{path}: holds several game logs (JSON Lines): give the "
                               "match id of the one to read")
        if isinstance(log, LogFileError):
            raise log
        found = log
    if found is None:
        raise LogFileError(f"{path}: no game log of match {match_id!r} in it")
    return found


def _checked_log(raw: bytes, name: str, validate: bool, one_line: bool = False
                 ) -> dict[str, Any] | LogFileError:
    """The game log `raw` holds, or the `LogFileError` saying why it is not one."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return LogFileError(f"{name}: not a JSON game log (not UTF-8 text: {exc.reason})")
    except json.JSONDecodeError as exc:
        at = "" if one_line else f"line {exc.lineno}, "
        return LogFileError(f"{name}: not a JSON game log ({at}column {exc.colno}: {exc.msg})")
    except RecursionError:  # a log is a few levels deep; this JSON nests past Python's stack
        return LogFileError(f"{name}: not a game log (its JSON nests too deeply)")
    if not isinstance(data, dict):
        return LogFileError(f"{name}: not a game log (the JSON is a {type(data).__name__}, "
                            "not an object)")
    if "format" not in data:
        return LogFileError(f"{name}: not a cfarena game log (no 'format' key)")
    if data["format"] not in READABLE_FORMATS or isinstance(data["format"], bool):
        return LogFileError(f"{name}: game log format {data['format']!r} is not supported "
                            f"(this version reads formats {_formats('and')})")
    if validate:
        problems = validate_log(data)
        if problems:
            shown = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
            return LogFileError(f"{name}: malformed format-{data['format']} game log: {shown}")
    return data
