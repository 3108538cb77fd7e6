"""The game log's format: build a log from a match record, read its seed and JSON forms.

A log is a JSON document (docs/gamelog.md, docs/gamelog.schema.json) holding
the seed, the rules, the seats and every applied move in order; the recorded
events, deals and result are re-derived by re-simulating it with the rules
engine (`cfarena.match.resimulation`), which is how
`cfarena.server.replay.verify.verify_log` detects a tampered log.

Logs are written in format 2. Format 1 logs (written before turn ids counted
each seat's own Turns: there one counter ran over the whole match) are still
read and verified by the numbering they were written with.

Format 2 writes the seed as a decimal string ("7422398311987148012"): seeds
are 64-bit, and a JSON number above 2**53 is rounded by JavaScript (the HTML
viewer) and other readers that hold numbers as doubles. Format 1 wrote it as a
JSON number, and is still read that way (`log_seed`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from cfarena.engine import Event
from cfarena.engine.dealing import RoundDeal
from cfarena.match.record import MatchRecord, fault_to_dict

LOG_FORMAT = 2  # the format written
READABLE_FORMATS = (1, 2)  # 1: turn ids count the match's decisions; 2: each seat's own


SEED_PATTERN = r"^-?(0|[1-9][0-9]*)$"  # a format-2 seed: a decimal integer string
_SEED_RE = re.compile(SEED_PATTERN)
SEED_BITS = 64  # a seed fits a signed 64-bit integer (how the database stores it)


def seed_to_json(seed: int) -> str:
    """A seed as format 2 writes it: a decimal string, exact for any JSON reader."""
    return str(seed)


def seed_problem(log: Mapping[str, Any]) -> str | None:
    """Why a log's `seed` is not one its format allows (None: it is).

    Format 1: a JSON integer. Format 2 on: a decimal integer string, no sign
    but `-`, no leading zeros, no spaces. Either way it fits 64 bits.
    """
    seed = log.get("seed")
    if log.get("format") == 1:
        if not isinstance(seed, int) or isinstance(seed, bool):
            return f"a format-1 seed is an integer, got {seed!r}"
        value = seed
    else:
        if not isinstance(seed, str) or not _SEED_RE.match(seed):
            return f"must be a decimal integer string such as \"42\", got {seed!r}"
        value = int(seed)
    if not -(2 ** (SEED_BITS - 1)) <= value < 2 ** (SEED_BITS - 1):
        return f"must fit a signed {SEED_BITS}-bit integer, got {value}"
    return None


def log_seed(log: Mapping[str, Any]) -> int:
    """The seed of a log (a string in format 2, a number in format 1); ValueError if the
    log's format does not allow what it holds."""
    problem = seed_problem(log)
    if problem is not None:
        raise ValueError(f"seed: {problem}")
    return int(log["seed"])


# --------------------------------------------------------------- JSON forms
def log_line(log: Mapping[str, Any]) -> str:
    """A game log as one line of JSON (keys in the recorded order, text as it is, no
    newline): what `cfarena export MATCH` writes, and each line of JSON Lines (`cfarena
    export --tournament`, the web's "download all games", `python -m cfarena.sdk play
    --log`)."""
    return json.dumps(log, ensure_ascii=False)


def event_to_dict(event: Event) -> dict[str, Any]:
    """An event as a compact JSON object (absent fields omitted)."""
    out: dict[str, Any] = {"kind": event.kind.value, "round": event.round_index}
    if event.seat is not None:
        out["seat"] = event.seat
    if event.tile is not None:
        out["tile"] = str(event.tile)
    if event.node is not None:
        out["node"] = event.node
    if event.parent is not None:
        out["parent"] = event.parent
    if event.scores is not None:
        out["scores"] = list(event.scores)
    if event.reason is not None:
        out["reason"] = event.reason.value
    return out


def deal_to_dict(deal: RoundDeal) -> dict[str, Any]:
    out: dict[str, Any] = {
        "round": deal.round_index,
        "round_double": str(deal.round_double),
        "first_seat": deal.first_seat,
        "hands": [[str(t) for t in hand] for hand in deal.hands],
        "boneyard": [str(t) for t in deal.boneyard],
    }
    if deal.centre_seat is not None:
        out["centre_seat"] = deal.centre_seat
    if deal.draw_off:
        out["draw_off"] = [[seat, str(t)] for seat, t in deal.draw_off]
    if deal.setup_draws:
        out["setup_draws"] = [[seat, str(t)] for seat, t in deal.setup_draws]
    return out


def record_to_log(record: MatchRecord) -> dict[str, Any]:
    """The game log (format `LOG_FORMAT`) of a referee match record."""
    return {
        "format": LOG_FORMAT,
        "match_id": record.match_id,
        "tournament_id": record.tournament_id,
        "key": record.key,
        "rules": record.rules.to_options(),
        "players": record.players,
        "seed": seed_to_json(record.seed),
        "seats": list(record.seat_bots),
        "time_control": dataclasses.asdict(record.time_control),
        "status": record.status.value,
        "reason": record.reason,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "actions": [a.to_dict() for a in record.actions],
        "faults": [fault_to_dict(f) for f in record.faults],
        "events": [event_to_dict(e) for e in record.events],
        "deals": [deal_to_dict(d) for d in record.deals],
        "result": {
            "round_scores": record.round_scores,
            "totals": record.totals,
            "ranks": record.ranks,
            "forfeited": record.forfeited,
        },
    }
