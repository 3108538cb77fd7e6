"""The game log's schema spells the arena's enums exactly as the code defines them once."""

from __future__ import annotations

import json
from pathlib import Path

from cfarena.match.record import LOG_STATUSES, FaultKind, MatchStatus
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.storage import models

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "gamelog.schema.json").read_text())


def test_log_status_is_the_match_status() -> None:
    assert SCHEMA["properties"]["status"]["enum"] == [s.value for s in LOG_STATUSES]
    assert set(LOG_STATUSES) == set(MatchStatus) - {MatchStatus.SCHEDULED}


def test_log_fault_kinds_are_the_fault_kinds() -> None:
    assert SCHEMA["$defs"]["fault"]["properties"]["kind"]["enum"] == [k.value for k in FaultKind]


def test_storage_uses_the_same_enums() -> None:
    assert models.MatchStatus is MatchStatus and models.FaultKind is FaultKind


def test_a_record_holds_a_status_not_free_text() -> None:
    record = simulate_record({"preset": "trains"}, 2, 5, timeouts=(1,))
    assert record.status is MatchStatus.FINISHED
    assert record.faults[0].kind is FaultKind.TIMEOUT
