"""Verifying game logs: form (`validate_log`), then content by re-simulation (`verify_log`).

    report = verify_logs({"m1.json": log1, "m2.json": log2})
    print("\\n".join(report.lines())); exit(0 if report.ok else 1)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cfarena.engine import Rules
from cfarena.engine.state import MatchState
from cfarena.match.log_format import log_seed
from cfarena.match.record import MatchStatus
from cfarena.match.resimulation import (
    LogError,
    decision_differences,
    replay_moves,
    seeded_deal,
    start_match,
)
from cfarena.server.replay.schema import validate_log


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
    (`cfarena.match.law`) does not give when it is fed the log's recorded
    answers and faults. Seat
    names, ids, timestamps and decision times cannot be re-derived: compare
    the log's sha256 with the stored one for those.
    """
    try:
        sim, error = replay_moves(log)
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


def log_sha256(log: Mapping[str, Any]) -> str:
    """The digest the database stores for a log (sha256 of its canonical JSON)."""
    # loaded here, not above: the storage package loads SQLAlchemy (slow for `--help`)
    from cfarena.server.storage import canonical_sha256

    return canonical_sha256(log)


@dataclass(frozen=True, slots=True)
class LogVerdict:
    """The verdict on one log: genuine iff `problems` is empty. An unreadable log (not
    JSON, a stored digest mismatch) has `readable` False and its one problem says why."""

    name: str
    match_id: str | None
    sha256: str
    problems: list[str] = field(default_factory=list)
    readable: bool = True

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """"OK name: genuine ..." or "FAIL name: n problem(s)", each problem indented
        below it; an unreadable log's one line "FAIL name: why"."""
        what = self.name + (f" (match {self.match_id})"
                            if self.match_id and self.match_id != self.name else "")
        if self.ok:
            return [f"OK    {what}: genuine (re-simulation agrees; sha256 {self.sha256[:16]})"]
        if not self.readable:
            return [f"FAIL  {what}: {p}" for p in self.problems]
        return [f"FAIL  {what}: {len(self.problems)} problem(s)",
                *(f"      - {p}" for p in self.problems)]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    verdicts: list[LogVerdict]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def failed(self) -> list[LogVerdict]:
        return [v for v in self.verdicts if not v.ok]

    def summary(self) -> str:
        """"4 of 5 log(s) genuine (1 could not be read)"."""
        good = sum(1 for v in self.verdicts if v.ok)
        unread = sum(1 for v in self.verdicts if not v.readable)
        return (f"{good} of {len(self.verdicts)} log(s) genuine"
                + (f" ({unread} could not be read)" if unread else ""))

    def lines(self) -> list[str]:
        """Human-readable report: each log's `LogVerdict.lines`, then the summary."""
        return [*(line for v in self.verdicts for line in v.lines()), self.summary()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "logs": [
                {"name": v.name, "match_id": v.match_id, "sha256": v.sha256, "ok": v.ok,
                 "problems": v.problems}
                for v in self.verdicts
            ],
        }


def verify_one(
    name: str, log: Any, expected_sha256: str | None = None
) -> LogVerdict:
    """Check one log's form and content (and its digest against a stored one, if given)."""
    if not isinstance(log, Mapping):
        what = type(log).__name__
        return LogVerdict(name, None, "", [f"$: a log must be a JSON object, got {what}"])
    digest = log_sha256(log)
    problems = [f"form: {p}" for p in validate_log(log)]
    try:
        problems += verify_log(log)
    except Exception as exc:  # a log malformed enough to break the checks is not genuine
        problems.append(f"cannot re-simulate: {type(exc).__name__}: {exc}")
    if expected_sha256 is not None and expected_sha256 != digest:
        problems.append(f"sha256: {digest} differs from the stored {expected_sha256} "
                        "(the log was changed after it was recorded)")
    match_id = log.get("match_id")
    return LogVerdict(name, match_id if isinstance(match_id, str) else None, digest,
                      list(dict.fromkeys(problems)))


def verify_logs(
    logs: Mapping[str, Any] | Iterable[Any],
    expected_sha256: Mapping[str, str] | None = None,
) -> VerifyReport:
    """Verify several logs: a mapping name -> log (file names, match ids) or a sequence.

    `expected_sha256` maps a name or match id to the digest stored with the
    log (the database's `log_sha256`); seat names, times and decision times
    are only covered by that digest, since re-simulation cannot derive them.
    """
    items = list(logs.items()) if isinstance(logs, Mapping) else [
        (str(log.get("match_id", f"log {i}")) if isinstance(log, Mapping) else f"log {i}", log)
        for i, log in enumerate(logs)
    ]
    expected = expected_sha256 or {}
    verdicts = []
    for name, log in items:
        want = expected.get(name)
        if want is None and isinstance(log, Mapping):
            want = expected.get(str(log.get("match_id")))
        verdicts.append(verify_one(name, log, want))
    return VerifyReport(verdicts)
