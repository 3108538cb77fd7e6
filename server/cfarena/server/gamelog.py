"""Game logs: build them from a match record, re-simulate and verify them.

A log is a JSON document (docs/gamelog.md, docs/gamelog.schema.json) holding
the seed, the rules, the seats and every applied move in order; the recorded
events, deals and result are re-derived by re-simulating it with the rules
engine, which is how `verify_log` detects a tampered log.

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
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import (
    Event,
    EventKind,
    IllegalMoveError,
    Move,
    RoundEnd,
    Rules,
    RulesError,
    Tile,
    apply_move,
    legal_moves,
    new_match,
    rank_seats,
)
from cfarena.engine.dealing import RoundDeal, deal_round
from cfarena.engine.state import MatchState
from cfarena.server.law_replay import decision_differences
from cfarena.server.match_record import MatchRecord, MatchStatus, fault_to_dict

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


def event_from_dict(data: dict[str, Any]) -> Event:
    return Event(
        kind=EventKind(data["kind"]),
        round_index=int(data["round"]),
        seat=data.get("seat"),
        tile=Tile.parse(data["tile"]) if "tile" in data else None,
        node=data.get("node"),
        parent=data.get("parent"),
        scores=tuple(data["scores"]) if "scores" in data else None,
        reason=RoundEnd(data["reason"]) if "reason" in data else None,
    )


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


# ------------------------------------------------------------ re-simulation
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


def _replay(log: Mapping[str, Any]) -> tuple[Resimulation, LogError | None]:
    """Re-simulate as far as the actions allow; the (partial) result and the error, if any."""
    state = start_match(log)
    spans: list[tuple[int, int]] = []
    error: LogError | None = None
    actions = log.get("actions", [])
    for i, action in enumerate(actions if isinstance(actions, list) else []):
        path = f"actions[{i}]"
        if state.is_over:
            error = LogError(f"{path}: the match was already over (an action was added?)")
            break
        seat = action.get("seat") if isinstance(action, dict) else None
        if seat != state.current_seat:
            error = LogError(
                f"{path}.seat: seat {seat} acted but seat {state.current_seat} was to move"
            )
            break
        moves = legal_moves(state)
        try:
            move = Move.parse(str(action.get("move")))
            if move not in moves:
                raise IllegalMoveError(move, f"{move.key} is not legal here")
            start = len(state.events)
            apply_move(state, move)
        except (ValueError, IllegalMoveError) as exc:
            error = LogError(f"{path}.move: {exc}")
            break
        spans.append((start, len(state.events)))
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
    sim, error = _replay(log)
    if error is not None:
        raise error
    return sim


def seeded_deal(state: MatchState, round_index: int) -> dict[str, Any]:
    """The deal of round `round_index` that the match's seed gives (JSON form)."""
    return deal_to_dict(deal_round(state.rules, state.deal_seed, round_index).to_deal())


def _first_difference(
    path: str, recorded: Any, replayed: Any, source: str = "re-simulation"
) -> str | None:
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in sorted(set(recorded) | set(replayed), key=str):
            diff = _first_difference(
                f"{path}.{key}", recorded.get(key), replayed.get(key), source
            )
            if diff:
                return diff
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
            diff = _first_difference(f"{path}[{i}]", a, b, source)
            if diff:
                return diff
        if len(recorded) != len(replayed):
            return f"{path}: recorded {len(recorded)} items, {source} gives {len(replayed)}"
        return None
    if recorded != replayed:
        return f"{path}: recorded {recorded!r}, {source} gives {replayed!r}"
    return None


# ----------------------------------------------------------------- checks
_MAX_REPORTED = 5


def _check_deals(log: Mapping[str, Any], state: MatchState) -> list[str]:
    """Every recorded deal must be the one the seed gives (a changed seed changes them all)."""
    deals = log.get("deals", [])
    if not isinstance(deals, list):
        return ["deals: not a list"]
    diffs: list[str] = []
    for r, recorded in enumerate(deals):
        diff = _first_difference(f"deals[{r}]", recorded, seeded_deal(state, r), "the seed")
        if diff:
            diffs.append(diff)
    if deals and len(diffs) == len(deals):
        return [
            f"seed: the recorded deals are not those of seed {log.get('seed')!r} "
            f"(the seed or the deals were changed; first: {diffs[0]})"
        ]
    return [f"{d} (the deal was changed)" for d in diffs[:_MAX_REPORTED]]


def actions_from_events(events: Sequence[Any]) -> list[tuple[int | None, str, int]]:
    """The moves the recorded events describe: (seat, move key, event index), in order.

    Setup events (round start, draw-off, setup draws, centre) are not moves.
    """
    out: list[tuple[int | None, str, int]] = []
    setup = False
    for j, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        kind = event.get("kind")
        if kind == "round_start":
            setup = True
        elif kind == "centre":
            setup = False
        elif not setup and kind == "play":
            out.append((event.get("seat"), f"{event.get('tile')}@{event.get('parent')}", j))
        elif not setup and kind in ("draw", "pass"):
            out.append((event.get("seat"), str(kind), j))
    return out


def _describe(seat: Any, move: Any) -> str:
    return f"seat {seat} {move!r}"


def _align_actions(log: Mapping[str, Any]) -> list[tuple[str, int | None, int | None]]:
    """Compare the actions with the moves the events record: (message, action, event index)."""
    raw = log.get("actions", [])
    actions = raw if isinstance(raw, list) else []
    recorded = [
        (a.get("seat"), str(a.get("move"))) if isinstance(a, dict) else (None, "?")
        for a in actions
    ]
    described = actions_from_events(log.get("events", []) if isinstance(
        log.get("events"), list) else [])
    from_events = [(s, k) for s, k, _ in described]
    out: list[tuple[str, int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(None, recorded, from_events, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            i, j = i1 + k, j1 + k
            (seat, move), (eseat, emove) = recorded[i], from_events[j]
            ev = described[j][2]
            if seat == eseat:
                msg = (f"actions[{i}].move: changed: recorded {move!r} but events[{ev}] "
                       f"record {emove!r}")
            elif move == emove:
                msg = (f"actions[{i}].seat: changed: recorded seat {seat} but events[{ev}] "
                       f"record seat {eseat}")
            else:
                msg = (f"actions[{i}]: changed: recorded {_describe(seat, move)} but events[{ev}] "
                       f"record {_describe(eseat, emove)}")
            out.append((msg, i, ev))
        for i in range(i1 + pairs, i2):
            seat, move = recorded[i]
            out.append((f"actions[{i}]: added: {_describe(seat, move)} is not in the events",
                        i, None))
        for j in range(j1 + pairs, j2):
            eseat, emove, ev = described[j]
            out.append((f"actions: removed before actions[{i2}]: events[{ev}] record "
                        f"{_describe(eseat, emove)} but no action does", None, ev))
        if len(out) >= _MAX_REPORTED:
            break
    return out[:_MAX_REPORTED]


def _event_differences(recorded: Sequence[Any], replayed: Sequence[Any]) -> list[int]:
    return [j for j, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b]


def verify_log(log: Mapping[str, Any]) -> list[str]:
    """Differences between a log and its re-simulation ([] = genuine).

    Each problem starts with the JSON path at fault: the seed or a deal that
    is not the seed's, an action whose move or seat disagrees with the
    recorded events (or was added or removed), an event the actions do not
    produce, a result (scores, totals, ranks, forfeits) or reason that is not
    the re-simulated one, and turn ids (numbered as the log's format numbers
    them), fallbacks, faults, forfeits or decision times the match law
    (`cfarena.server.law`) does not give when it is fed the log's recorded
    answers and faults. Seat
    names, ids, timestamps and decision times cannot be re-derived: compare
    the log's sha256 with the stored one for those.
    """
    try:
        sim, error = _replay(log)
    except LogError as exc:
        return [str(exc)]
    problems = _check_deals(log, start_match(log))
    alignment = _align_actions(log)
    raw_events = log.get("events", [])
    recorded_events = raw_events if isinstance(raw_events, list) else []
    finished = log.get("status") == MatchStatus.FINISHED.value
    sim_events = sim.events if finished else sim.events[: len(recorded_events)]
    diff_events = _event_differences(recorded_events, sim_events)
    result_doc = log.get("result")
    recorded_result: Mapping[str, Any] = result_doc if isinstance(result_doc, dict) else {}
    keys: Iterable[str] = (
        ("round_scores", "totals", "ranks") if finished else ("round_scores", "totals")
    )
    result_diffs = [
        d for key in keys
        if (d := _first_difference(f"result.{key}", recorded_result.get(key), sim.result[key]))
    ]
    # one event changed and nothing else: the actions are genuine, the event is not
    only_event = (
        error is None and len(diff_events) == 1 and not result_diffs
        and len(recorded_events) == len(sim_events)
    )
    for msg, _, ev in alignment:
        if only_event and ev == diff_events[0]:
            continue
        problems.append(msg)
    if error is not None:
        problems.append(str(error))
    if finished and error is None and not sim.state.is_over:
        problems.append("actions: the log says finished but its moves do not end the match "
                        "(actions were removed?)")
    recorded_deals = log.get("deals", [])
    if isinstance(recorded_deals, list) and error is None and len(recorded_deals) != len(
        sim.deals
    ):
        problems.append(f"deals: recorded {len(recorded_deals)} rounds, "
                        f"re-simulation gives {len(sim.deals)}")
    if error is None:
        if diff_events:
            j = diff_events[0]
            detail = _first_difference(f"events[{j}]", recorded_events[j], sim_events[j])
            what = "changed: " if only_event else ""
            problems.append(f"{detail} ({what}the actions do not produce this event)")
        elif len(recorded_events) != len(sim_events):
            problems.append(f"events: recorded {len(recorded_events)} events, "
                            f"re-simulation gives {len(sim_events)}")
        problems.extend(result_diffs)
        if finished and sim.state.outcome is not None:
            reason = sim.state.outcome.reason.value
            if log.get("reason") != reason:
                problems.append(f"reason: recorded {log.get('reason')!r}, "
                                f"re-simulation gives {reason!r}")
    problems.extend(decision_differences(log, Rules.from_options(log["rules"]), log_seed(log),
                                         complete=error is None))
    return list(dict.fromkeys(problems))


def seats_of(log: Mapping[str, Any]) -> Sequence[str]:
    return [str(s) for s in log.get("seats", [])]
