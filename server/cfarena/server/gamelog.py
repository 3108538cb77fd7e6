"""Game logs (format 1): build them from a match record, re-simulate and verify them.

A log is a JSON document (docs/gamelog.md, docs/gamelog.schema.json) holding
the seed, the rules, the seats and every applied move in order; the recorded
events, deals and result are re-derived by re-simulating it with the rules
engine, which is how `verify_log` detects a tampered log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
from cfarena.engine.dealing import RoundDeal
from cfarena.engine.match import MatchState
from cfarena.server.referee.match import MatchRecord

LOG_FORMAT = 1


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
    """The format-1 game log of a referee match record."""
    tc = record.time_control
    return {
        "format": LOG_FORMAT,
        "match_id": record.match_id,
        "tournament_id": record.tournament_id,
        "key": record.key,
        "rules": record.rules.to_options(),
        "players": record.players,
        "seed": record.seed,
        "seats": list(record.seat_bots),
        "time_control": {
            "move_timeout_ms": tc.move_timeout_ms,
            "bank_ms": tc.bank_ms,
            "increment_ms": tc.increment_ms,
            "strikes": tc.strikes,
        },
        "status": record.status,
        "reason": record.reason,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "actions": [a.to_dict() for a in record.actions],
        "faults": [f.to_dict() for f in record.faults],
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
    """The state after replaying a log's actions, and its derived documents."""

    state: MatchState
    events: list[dict[str, Any]]
    deals: list[dict[str, Any]]
    result: dict[str, Any]


def resimulate(log: dict[str, Any]) -> Resimulation:
    """Replay a log's actions from its seed and rules with the engine."""
    try:
        rules = Rules.from_options(log["rules"])
        state = new_match(rules, int(log["players"]), int(log["seed"]))
    except (KeyError, TypeError, ValueError, RulesError) as exc:
        raise LogError(f"rules/players/seed: cannot start the match: {exc}") from exc
    for i, action in enumerate(log.get("actions", [])):
        path = f"actions[{i}]"
        if state.is_over:
            raise LogError(f"{path}: the match was already over")
        if action.get("seat") != state.current_seat:
            raise LogError(
                f"{path}: seat {action.get('seat')} acted but seat {state.current_seat} was to move"
            )
        try:
            move = Move.parse(str(action.get("move")))
            if move not in legal_moves(state):
                raise IllegalMoveError(move, f"{move.key} is not legal here")
            apply_move(state, move)
        except (ValueError, IllegalMoveError) as exc:
            raise LogError(f"{path}: {exc}") from exc
    forfeited = list(log.get("result", {}).get("forfeited", []))
    round_scores = [list(r.scores) for r in state.round_outcomes]
    totals = [sum(r[s] for r in round_scores) for s in range(state.players)]
    ranks: list[int] = []
    if state.outcome is not None:
        ranks = list(
            rank_seats(round_scores, state.rules.tie_break, forfeited)
            if forfeited
            else state.outcome.ranks
        )
    result = {"round_scores": round_scores, "totals": totals, "ranks": ranks, "forfeited": forfeited}
    return Resimulation(
        state=state,
        events=[event_to_dict(e) for e in state.events],
        deals=[deal_to_dict(d) for d in state.deals],
        result=result,
    )


def _first_difference(path: str, recorded: Any, replayed: Any) -> str | None:
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in sorted(set(recorded) | set(replayed), key=str):
            diff = _first_difference(f"{path}.{key}", recorded.get(key), replayed.get(key))
            if diff:
                return diff
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
            diff = _first_difference(f"{path}[{i}]", a, b)
            if diff:
                return diff
        if len(recorded) != len(replayed):
            return f"{path}: recorded {len(recorded)} items, re-simulation gives {len(replayed)}"
        return None
    if recorded != replayed:
        return f"{path}: recorded {recorded!r}, re-simulation gives {replayed!r}"
    return None


def verify_log(log: dict[str, Any]) -> list[str]:
    """Differences between a log and its re-simulation ([] = genuine)."""
    try:
        sim = resimulate(log)
    except LogError as exc:
        return [str(exc)]
    problems: list[str] = []
    finished = log.get("status") == "finished"
    if finished and not sim.state.is_over:
        problems.append("actions: the log says finished but its moves do not end the match")
    recorded_events = log.get("events", [])
    if not finished:  # an aborted match: the recorded events are a prefix
        sim_events = sim.events[: len(recorded_events)]
    else:
        sim_events = sim.events
    for name, recorded, replayed in (
        ("deals", log.get("deals", []), sim.deals),
        ("events", recorded_events, sim_events),
    ):
        diff = _first_difference(name, recorded, replayed)
        if diff:
            problems.append(diff)
    recorded_result = log.get("result", {})
    keys: Iterable[str] = (
        ("round_scores", "totals", "ranks") if finished else ("round_scores", "totals")
    )
    for key in keys:
        diff = _first_difference(f"result.{key}", recorded_result.get(key), sim.result[key])
        if diff:
            problems.append(diff)
    return problems


def seats_of(log: dict[str, Any]) -> Sequence[str]:
    return [str(s) for s in log.get("seats", [])]
