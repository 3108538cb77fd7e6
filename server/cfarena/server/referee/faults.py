"""Faults a seat can commit, and the referee's record of one."""

from __future__ import annotations

from dataclasses import dataclass

# the wire's fault kinds (cfarena.v1.FaultKind); one enum for SDK and referee
from cfarena.sdk.types import FaultKind as FaultKind


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault: which seat, what kind, the offending input and when (turn id)."""

    seat: int
    kind: FaultKind
    detail: str
    turn_id: int
    forfeit: bool  # whether this fault forfeited the match

    def to_dict(self) -> dict[str, object]:
        return {
            "seat": self.seat,
            "kind": self.kind.value,
            "detail": self.detail,
            "turn_id": self.turn_id,
            "forfeit": self.forfeit,
        }
