"""Verifying game logs: form (`validate_log`), then content by re-simulation (`verify_log`).

    report = verify_logs({"m1.json": log1, "m2.json": log2})
    print("\\n".join(report.lines())); exit(0 if report.ok else 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cfarena.server.gamelog import verify_log
from cfarena.server.replay.schema import validate_log


def log_sha256(log: Mapping[str, Any]) -> str:
    """The digest the database stores for a log (sha256 of its canonical JSON)."""
    # loaded here, not above: the storage package loads SQLAlchemy (slow for `--help`)
    from cfarena.server.storage import canonical_sha256

    return canonical_sha256(log)


@dataclass(frozen=True, slots=True)
class LogVerdict:
    """The verdict on one log: genuine iff `problems` is empty."""

    name: str
    match_id: str | None
    sha256: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class VerifyReport:
    verdicts: list[LogVerdict]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def failed(self) -> list[LogVerdict]:
        return [v for v in self.verdicts if not v.ok]

    def lines(self) -> list[str]:
        """Human-readable report: one line per log, then its problems indented."""
        out: list[str] = []
        for v in self.verdicts:
            what = f"{v.name}" + (f" (match {v.match_id})" if v.match_id and v.match_id != v.name
                                  else "")
            if v.ok:
                out.append(f"OK    {what}: genuine (re-simulation agrees; sha256 {v.sha256[:16]})")
            else:
                out.append(f"FAIL  {what}: {len(v.problems)} problem(s)")
                out.extend(f"      - {p}" for p in v.problems)
        good = sum(1 for v in self.verdicts if v.ok)
        out.append(f"{good} of {len(self.verdicts)} log(s) genuine")
        return out

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
