"""A stored match (its game log) scores as its match record does."""

from __future__ import annotations

import pytest

from cfarena.bots import make_bot
from cfarena.engine import Rules
from cfarena.match.log_format import record_to_log
from cfarena.sdk.local import play_match
from cfarena.server.sprt.match_results import ScoreKind, log_seated_results, seated_results


@pytest.mark.parametrize("kind", list(ScoreKind))
def test_a_logged_match_scores_as_its_record(kind: ScoreKind) -> None:
    seats = ("smart", "greedy", "random")
    rules = Rules.preset("standard").with_options(rounds="single")
    for seed in range(6):
        record = play_match([make_bot(name) for name in seats], rules, seed, f"m{seed}",
                            names=seats).record
        logged = log_seated_results(record_to_log(record), kind)
        assert logged == seated_results(record, kind)


def test_a_log_without_a_result_is_not_scored() -> None:
    seats = ("smart", "greedy")
    rules = Rules.preset("standard").with_options(rounds="single")
    log = record_to_log(play_match([make_bot(name) for name in seats], rules, 1, "m1",
                                   names=seats).record)
    log["status"] = "aborted"
    with pytest.raises(ValueError, match="no result to score"):
        log_seated_results(log, ScoreKind.RAW)
