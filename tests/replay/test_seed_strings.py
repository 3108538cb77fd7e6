"""Seeds are 64-bit: format 2 writes them as decimal strings, so that no JSON reader
rounds them (JavaScript, the HTML viewer's language, holds numbers as doubles: above
2**53 a JSON number becomes another seed). Format-1 logs (numbers) still read."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cfarena.match.log_format import log_seed
from cfarena.match.resimulation import start_match
from cfarena.server.replay import (
    build_viewer_data,
    export_log,
    load_log_file,
    render_html,
    simulate_log,
    validate_log,
    verify_logs,
)
from cfarena.server.replay.verify import verify_log
from tests.browser import Watched

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE.parents[1] / "docs" / "gamelog.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
Log = dict[str, Any]

JS_EXACT = 2**53  # the largest integer up to which every integer is a double
BIG_SEEDS = [JS_EXACT + 1, 7422398311987148013, 2**63 - 1]


def as_javascript_reads(text: str) -> Any:
    """JSON parsed the way JavaScript's JSON.parse does: every number a double."""
    return json.loads(text, parse_int=float)


@cache
def _log(seed: int) -> Log:
    return simulate_log({"preset": "standard", "rounds": "half"}, 3, seed, timeouts=(4,))


def big_log(seed: int) -> Log:
    return copy.deepcopy(_log(seed))


def _format1() -> Log:
    logs: dict[str, Log] = json.loads((HERE / "format1_logs.json").read_text())
    return logs["standard-4p-strikes2"]


def test_the_rounding_is_real() -> None:
    # the control: each of these seeds, written as a JSON number, comes back as another
    for seed in BIG_SEEDS:
        assert as_javascript_reads(json.dumps({"seed": seed}))["seed"] != seed


@pytest.mark.parametrize("seed", BIG_SEEDS)
def test_a_format2_log_writes_its_seed_as_a_string_and_verifies(seed: int) -> None:
    log = big_log(seed)
    assert log["format"] == 2
    assert log["seed"] == str(seed)
    assert log_seed(log) == seed
    assert start_match(log).seed == seed
    assert validate_log(log) == []
    assert list(VALIDATOR.iter_errors(log)) == []
    assert verify_log(log) == []


@pytest.mark.parametrize("seed", BIG_SEEDS)
def test_a_big_seed_round_trips_exactly_through_the_json_export(seed: int,
                                                                 tmp_path: Path) -> None:
    log = big_log(seed)
    path = export_log(log, tmp_path / "game.json")
    text = path.read_text()
    assert f'"seed": "{seed}"' in text
    assert int(as_javascript_reads(text)["seed"]) == seed  # exact even for JavaScript
    loaded = load_log_file(path)
    assert loaded == log
    assert verify_logs({"game.json": loaded}).ok


@pytest.mark.parametrize("seed", BIG_SEEDS)
def test_a_big_seed_round_trips_exactly_through_the_html(seed: int, tmp_path: Path) -> None:
    log = big_log(seed)
    page = render_html(log)
    found = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found is not None
    data = as_javascript_reads(found.group(1))
    assert data["seed"] == str(seed)
    # and the page shows it by joining strings, never by turning it into a number
    assert '"seed " + D.seed' in page
    assert not re.search(r"(Number|parseInt|parseFloat)\(D\.seed|\+D\.seed", page)
    # an exported HTML file holds the same
    html = export_log(log, tmp_path / "game.html")
    assert f'"seed":"{seed}"' in html.read_text()


def test_format1_logs_keep_their_number_and_the_viewer_shows_it_exactly() -> None:
    log = _format1()
    assert log["format"] == 1 and isinstance(log["seed"], int)
    assert validate_log(log) == [] and verify_log(log) == []
    assert build_viewer_data(log)["seed"] == str(log["seed"])
    # a format-1 log holds a 64-bit seed as a JSON number: well-formed (its deals are
    # not that seed's, which verify finds)
    big = {**log, "seed": 2**63 - 1}
    assert validate_log(big) == []
    assert list(VALIDATOR.iter_errors(big)) == []
    assert verify_log(big)[0].startswith(f"seed: the recorded deals are not those of seed "
                                         f"{2**63 - 1}")


# (format, seed, the problem validate_log names, whether the JSON Schema sees it too: it
# says "digits" and "integer" but knows no 64 bits, and 42.0 is an integer to it)
@pytest.mark.parametrize(("fmt", "seed", "problem", "schema_too"), [
    (2, 42, "must be a decimal integer string", True),
    (2, "0x2a", "must be a decimal integer string", True),
    (2, "+42", "must be a decimal integer string", True),
    (2, "", "must be a decimal integer string", True),
    (2, "00", "must be a decimal integer string", True),
    (2, str(2**63), "must fit a signed 64-bit integer", False),
    (2, str(2**70), "must fit a signed 64-bit integer", True),
    (1, "42", "a format-1 seed is an integer", True),
    (1, 42.0, "a format-1 seed is an integer", False),
    (1, True, "a format-1 seed is an integer", True),
    (1, -(2**63) - 1, "must fit a signed 64-bit integer", True),
])
def test_a_seed_of_the_wrong_form_is_named(fmt: int, seed: Any, problem: str,
                                           schema_too: bool) -> None:
    log = big_log(BIG_SEEDS[0]) if fmt == 2 else copy.deepcopy(_format1())
    log["seed"] = seed
    problems = validate_log(log)
    assert len(problems) == 1 and problems[0].startswith("seed: ") and problem in problems[0]
    assert any(p.startswith("rules/players/seed: cannot start the match: seed:")
               for p in verify_log(log))
    by_schema = any(list(e.absolute_path) == ["seed"] for e in VALIDATOR.iter_errors(log))
    assert by_schema == schema_too


def test_negative_seeds_are_strings_too() -> None:
    log = simulate_log({"preset": "standard", "rounds": "single"}, 2, -(2**63))
    assert log["seed"] == str(-(2**63))
    assert validate_log(log) == [] and list(VALIDATOR.iter_errors(log)) == []
    assert verify_log(log) == []


@pytest.mark.browser
def test_the_viewer_shows_a_big_seed_exactly_in_chromium(tmp_path: Path, page: Watched) -> None:
    seed = BIG_SEEDS[0]
    html_file = export_log(big_log(seed), tmp_path / "replay.html")
    p = page.page
    p.goto(html_file.resolve().as_uri(), wait_until="load")
    page.check()
    # the control: this browser does round the number form of the seed
    assert p.evaluate(f"String(JSON.parse('{{\"s\": {seed}}}').s)") != str(seed)
    meta = p.text_content("#meta") or ""
    assert f"seed {seed} ·" in meta, meta
    assert p.evaluate("typeof cfReplay") == "object"
