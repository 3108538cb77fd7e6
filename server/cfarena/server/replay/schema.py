"""The shape of a game log (formats 1 and 2): hand-written checks and loading a log file.

`validate_log` checks what docs/gamelog.schema.json describes (types, keys,
enums, patterns) plus what a schema cannot say (array lengths equal to the
number of players, seats in range), and names the JSON path of each problem.
It checks the form only; `verify_log` checks the content by re-simulation.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cfarena.engine.rules import OPTION_KEYS, PRESETS
from cfarena.server.gamelog import READABLE_FORMATS, seed_problem

TILE_RE = re.compile(r"^(0|[1-9][0-9]?)-(0|[1-9][0-9]?)$")
MOVE_RE = re.compile(r"^((0|[1-9][0-9]?)-(0|[1-9][0-9]?)@(0|[1-9][0-9]*)|draw|pass)$")
TOP_KEYS = (
    "format", "match_id", "tournament_id", "key", "rules", "players", "seed", "seats",
    "time_control", "status", "reason", "started_at", "finished_at", "actions", "faults",
    "events", "deals", "result",
)
EVENT_KINDS = ("round_start", "draw_off", "centre", "play", "draw", "pass", "round_end")
# per event kind: required keys, optional keys (besides kind and round)
EVENT_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "round_start": (("seat", "tile"), ()),
    "draw_off": (("seat", "tile"), ()),
    "centre": (("tile", "node"), ("seat",)),
    "play": (("seat", "tile", "node", "parent"), ()),
    "draw": (("seat", "tile"), ()),
    "pass": (("seat",), ()),
    "round_end": (("scores", "reason"), ("seat",)),
}
FAULT_KINDS = ("timeout", "illegal", "protocol", "disconnect", "limit")
STATUSES = ("finished", "aborted", "running")
RULE_ENUMS = {
    "start": ("centre_first", "holder", "draw_off"),
    "draw": ("one", "until_playable"),
    "play_drawn": ("must", "may"),
    "tie_break": ("shared", "zero_rounds"),
}


class LogFileError(ValueError):
    """A file that is not a readable game log (the message says why)."""


def _formats(joiner: str = "or") -> str:
    return f" {joiner} ".join(str(f) for f in READABLE_FORMATS)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, msg: str) -> None:
        self.problems.append(f"{path}: {msg}")

    def int_(self, path: str, v: Any, lo: int | None = None, hi: int | None = None,
             null: bool = False) -> bool:
        if v is None and null:
            return True
        if not _is_int(v):
            self.fail(path, f"must be an integer{' or null' if null else ''}, got {v!r}")
            return False
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.fail(path, f"must be in {lo}..{'' if hi is None else hi}, got {v}")
            return False
        return True

    def str_(self, path: str, v: Any, null: bool = False) -> bool:
        if (v is None and null) or isinstance(v, str):
            return True
        self.fail(path, f"must be a string{' or null' if null else ''}, got {v!r}")
        return False

    def tile(self, path: str, v: Any) -> None:
        if not isinstance(v, str) or not TILE_RE.match(v):
            self.fail(path, f"must be a tile 'A-B', got {v!r}")
        elif int(v.split("-")[0]) > int(v.split("-")[1]):
            self.fail(path, f"a tile is written low end first, got {v!r}")

    def obj(self, path: str, v: Any, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> bool:
        if not isinstance(v, dict):
            self.fail(path, f"must be an object, got {type(v).__name__}")
            return False
        for k in required:
            if k not in v:
                self.fail(path, f"missing key {k!r}")
        for k in v:
            if k not in required and k not in optional:
                self.fail(k if path == "$" else f"{path}.{k}", "unknown key")
        return True

    def array(self, path: str, v: Any, item: Callable[[str, Any], object],
              length: int | None = None) -> None:
        if not isinstance(v, list):
            self.fail(path, f"must be an array, got {type(v).__name__}")
            return
        if length is not None and len(v) != length:
            self.fail(path, f"must have {length} items (one per seat), got {len(v)}")
        for i, x in enumerate(v):
            item(f"{path}[{i}]", x)


def _check_rules(c: _Checker, v: Any) -> None:
    if not c.obj("rules", v, ("preset",), OPTION_KEYS):
        return
    if v.get("preset") not in PRESETS:
        c.fail("rules.preset", f"must be one of {', '.join(PRESETS)}, got {v.get('preset')!r}")
    for key, value in v.items():
        path = f"rules.{key}"
        if key in RULE_ENUMS:
            if value not in RULE_ENUMS[key]:
                c.fail(path, f"must be one of {', '.join(RULE_ENUMS[key])}, got {value!r}")
        elif key == "spokes":
            if value != "players":
                c.int_(path, value, 1, 18)
        elif key == "rounds":
            if value not in ("full", "half", "single"):
                c.int_(path, value, 1, 19)
        elif key == "set_size":
            c.int_(path, value, 3, 18, null=True)
        elif key in ("hand_size", "boneyard_reserve", "end_at_score"):
            c.int_(path, value, 0, null=True)
        elif key in ("toes", "double_blank"):
            c.int_(path, value, 0)


def validate_log(log: Any) -> list[str]:
    """Form problems of a log, each "JSON.path: problem" ([] = well-formed).

    Formats 1 and 2 have the same shape but for the seed (a JSON integer in
    format 1, a decimal string in format 2); they also differ in how turn ids
    are numbered, which `verify_log` checks.
    """
    c = _Checker()
    if not c.obj("$", log, TOP_KEYS):
        return c.problems
    if log.get("format") not in READABLE_FORMATS or isinstance(log.get("format"), bool):
        c.fail("format", f"must be {_formats()}, got {log.get('format')!r}")
    c.str_("match_id", log.get("match_id"))
    c.int_("tournament_id", log.get("tournament_id"), null=True)
    c.str_("key", log.get("key"), null=True)
    _check_rules(c, log.get("rules"))
    ok_players = c.int_("players", log.get("players"), 2, 8)
    players = log["players"] if ok_players else None
    if "seed" in log and (problem := seed_problem(log)) is not None:
        c.fail("seed", problem)
    c.array("seats", log.get("seats"), lambda p, x: c.str_(p, x), players)
    tc = log.get("time_control")
    tc_keys = ("move_timeout_ms", "bank_ms", "increment_ms", "strikes")
    if c.obj("time_control", tc, tc_keys):
        for k in tc_keys:
            if k in tc:
                c.int_(f"time_control.{k}", tc[k], 0)
    if log.get("status") not in STATUSES:
        c.fail("status", f"must be one of {', '.join(STATUSES)}, got {log.get('status')!r}")
    c.str_("reason", log.get("reason"))
    for k in ("started_at", "finished_at"):
        if not _is_num(log.get(k)):
            c.fail(k, f"must be a number (seconds since the epoch), got {log.get(k)!r}")
    hi = None if players is None else players - 1

    def seat(path: str, v: Any) -> None:
        c.int_(path, v, 0, hi)

    def action(path: str, a: Any) -> None:
        if not c.obj(path, a, ("seat", "move"), ("turn_id", "ms", "fallback")):
            return
        seat(f"{path}.seat", a.get("seat"))
        if not isinstance(a.get("move"), str) or not MOVE_RE.match(a["move"]):
            c.fail(f"{path}.move", f"must be 'A-B@NODE', 'draw' or 'pass', got {a.get('move')!r}")
        if ("turn_id" in a) != ("ms" in a):
            c.fail(path, "turn_id and ms come together (a bot decision) or not at all")
        if "turn_id" in a:
            c.int_(f"{path}.turn_id", a["turn_id"], 1)
            if a["ms"] is not None and not (_is_num(a["ms"]) and a["ms"] >= 0):
                c.fail(f"{path}.ms", f"must be a number >= 0 or null, got {a['ms']!r}")
        if "fallback" in a and a["fallback"] is not True:
            c.fail(f"{path}.fallback", f"must be true when present, got {a['fallback']!r}")

    def fault(path: str, f: Any) -> None:
        if not c.obj(path, f, ("seat", "kind", "detail", "turn_id", "forfeit")):
            return
        seat(f"{path}.seat", f.get("seat"))
        if f.get("kind") not in FAULT_KINDS:
            kinds = ", ".join(FAULT_KINDS)
            c.fail(f"{path}.kind", f"must be one of {kinds}, got {f.get('kind')!r}")
        c.str_(f"{path}.detail", f.get("detail"))
        c.int_(f"{path}.turn_id", f.get("turn_id"), 0)
        if not isinstance(f.get("forfeit"), bool):
            c.fail(f"{path}.forfeit", f"must be true or false, got {f.get('forfeit')!r}")

    def event(path: str, e: Any) -> None:
        if not isinstance(e, dict):
            c.fail(path, f"must be an object, got {type(e).__name__}")
            return
        kind = e.get("kind")
        if kind not in EVENT_KINDS:
            c.fail(f"{path}.kind", f"must be one of {', '.join(EVENT_KINDS)}, got {kind!r}")
            return
        required, optional = EVENT_KEYS[kind]
        c.obj(path, e, ("kind", "round", *required), optional)
        c.int_(f"{path}.round", e.get("round"), 0)
        if "seat" in e:
            seat(f"{path}.seat", e["seat"])
        if "tile" in e:
            c.tile(f"{path}.tile", e["tile"])
        for k in ("node", "parent"):
            if k in e:
                c.int_(f"{path}.{k}", e[k], 0)
        if "scores" in e:
            c.array(f"{path}.scores", e["scores"], lambda p, x: c.int_(p, x, 0), players)
        if "reason" in e and e["reason"] not in ("went_out", "blocked"):
            c.fail(f"{path}.reason", f"must be went_out or blocked, got {e['reason']!r}")

    def seat_tile(path: str, v: Any) -> None:
        if not isinstance(v, list) or len(v) != 2:
            c.fail(path, f"must be [seat, tile], got {v!r}")
            return
        seat(f"{path}[0]", v[0])
        c.tile(f"{path}[1]", v[1])

    def deal(path: str, d: Any) -> None:
        if not c.obj(path, d, ("round", "round_double", "first_seat", "hands", "boneyard"),
                     ("centre_seat", "draw_off", "setup_draws")):
            return
        c.int_(f"{path}.round", d.get("round"), 0)
        c.tile(f"{path}.round_double", d.get("round_double"))
        seat(f"{path}.first_seat", d.get("first_seat"))
        c.array(f"{path}.hands", d.get("hands"),
                lambda p, h: c.array(p, h, c.tile), players)
        c.array(f"{path}.boneyard", d.get("boneyard"), c.tile)
        if "centre_seat" in d:
            seat(f"{path}.centre_seat", d["centre_seat"])
        for k in ("draw_off", "setup_draws"):
            if k in d:
                c.array(f"{path}.{k}", d[k], seat_tile)

    c.array("actions", log.get("actions"), action)
    c.array("faults", log.get("faults"), fault)
    c.array("events", log.get("events"), event)
    c.array("deals", log.get("deals"), deal)
    result = log.get("result")
    if c.obj("result", result, ("round_scores", "totals", "ranks", "forfeited")):
        c.array("result.round_scores", result.get("round_scores"),
                lambda p, row: c.array(p, row, lambda q, x: c.int_(q, x, 0), players))
        c.array("result.totals", result.get("totals"),
                lambda p, x: c.int_(p, x, 0), players)
        ranks = result.get("ranks")
        c.array("result.ranks", ranks, lambda p, x: c.int_(p, x, 1, 8),
                None if not ranks else players)
        c.array("result.forfeited", result.get("forfeited"), seat)
    return c.problems


def load_log_file(path: str | Path, validate: bool = True) -> dict[str, Any]:
    """Read a game log from a JSON file (`.gz` too); `LogFileError` saying why if it is not one.

    With `validate`, the log's form is checked too (`validate_log`); verification
    callers pass False and report those problems themselves.
    """
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
    except OSError as exc:
        raise LogFileError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise LogFileError(f"{p}: not a JSON game log (not UTF-8 text: {exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise LogFileError(
            f"{p}: not a JSON game log (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(data, dict):
        raise LogFileError(f"{p}: not a game log (the JSON is a {type(data).__name__}, "
                           "not an object)")
    if "format" not in data:
        raise LogFileError(f"{p}: not a cfarena game log (no 'format' key)")
    if data["format"] not in READABLE_FORMATS or isinstance(data["format"], bool):
        raise LogFileError(f"{p}: game log format {data['format']!r} is not supported "
                           f"(this version reads formats {_formats('and')})")
    if validate:
        problems = validate_log(data)
        if problems:
            shown = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
            raise LogFileError(f"{p}: malformed format-{data['format']} game log: {shown}")
    return data
