"""Deal groups: their seatings, placement results and the group's head-to-head score."""

from __future__ import annotations

import pytest

from cfarena.match.log_format import record_to_log
from cfarena.match.record import MatchStatus
from cfarena.server.replay.simulate import simulate_record
from cfarena.server.sprt.deal_group import (
    SeatedResults,
    group_score,
    head_to_head,
    placement,
    point_results,
    seatings,
)
from cfarena.server.sprt.luck import record_adjusted_results
from cfarena.server.sprt.match_results import ScoreKind, log_seated_results, seated_results


def swapped(seating: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("O" if b == "N" else "N" if b == "O" else b for b in seating)


@pytest.mark.parametrize(("players", "field", "size"), [
    (2, (), 2), (3, ("f",), 6), (4, ("f",), 4), (4, ("f", "g"), 8), (5, ("f",), 10),
    (8, ("f",), 8), (8, ("f", "g", "h"), 8), (8, ("f", "g"), 16),
])
def test_every_seat_and_both_orders(players: int, field: tuple[str, ...], size: int) -> None:
    group = seatings("N", "O", field, players)
    assert len(group) == size == len(set(group))
    for seating in group:
        assert len(seating) == players
        assert seating.count("N") == 1 and seating.count("O") == 1
    # NEW and OLD each hold every seat (every hand of the deal)
    assert {s.index("N") for s in group} == set(range(players))
    assert {s.index("O") for s in group} == set(range(players))
    # the mirror: swapping NEW and OLD gives the same group (symmetric under H0)
    assert {swapped(s) for s in group} == set(group)


def test_rotations_are_cyclic_and_new_starts_opposite_old() -> None:
    group = seatings("N", "O", ("a", "b"), 4)
    assert group[0] == ("N", "a", "O", "b")
    assert group[1] == ("b", "N", "a", "O")


@pytest.mark.parametrize(("new", "old", "field", "players", "message"), [
    ("N", "N", ("f",), 4, "different names"),
    ("N", "O", (), 4, "needs field bots"),
    ("N", "O", ("N",), 4, "must not be NEW or OLD"),
    ("N", "O", (), 1, "at least 2"),
])
def test_bad_groups_are_refused(new: str, old: str, field: tuple[str, ...], players: int,
                                message: str) -> None:
    with pytest.raises(ValueError, match=message):
        seatings(new, old, field, players)


def test_placement_from_ranks() -> None:
    assert placement([1, 2, 3, 4]) == (1.0, 2 / 3, 1 / 3, 0.0)
    assert placement([2, 1]) == (0.0, 1.0)
    assert placement([1, 1, 3, 3]) == (1.0, 1.0, 1 / 3, 1 / 3)  # shared ranks share


def test_two_players_score_win_draw_loss() -> None:
    def score(ranks: list[int]) -> float:
        return head_to_head(SeatedResults(("N", "O"), placement(ranks)), "N", "O")

    assert (score([1, 2]), score([1, 1]), score([2, 1])) == (1.0, 0.5, 0.0)


def test_group_score_is_the_mean_over_its_matches() -> None:
    matches = [
        SeatedResults(("N", "f", "O", "f"), placement([1, 2, 4, 3])),  # N first, O last: 1
        SeatedResults(("f", "N", "f", "O"), placement([1, 3, 4, 2])),  # N one below O: 1/3
    ]
    assert group_score(matches, "N", "O") == pytest.approx((1.0 + 1 / 3) / 2)
    assert group_score(matches, "O", "N") == pytest.approx(1 - (1.0 + 1 / 3) / 2)


def test_points_score_the_point_difference_per_round() -> None:
    assert point_results([0, 7, 35], 1) == pytest.approx((0.0, -0.2, -1.0))
    assert point_results([0, 70], 10) == pytest.approx((0.0, -0.2))  # per round played
    # NEW 7 points fewer than OLD in one round: 1/2 + 7 / 70
    match = SeatedResults(("N", "f", "O"), point_results([10, 0, 17], 1))
    assert head_to_head(match, "N", "O") == pytest.approx(0.6)
    assert head_to_head(match, "O", "N") == pytest.approx(0.4)
    with pytest.raises(ValueError, match="at least one round"):
        point_results([0, 0], 0)


def test_a_match_without_both_bots_is_refused() -> None:
    with pytest.raises(ValueError, match="one seat each"):
        head_to_head(SeatedResults(("N", "f"), (1.0, 0.0)), "N", "O")
    with pytest.raises(ValueError, match="at least one match"):
        group_score([], "N", "O")


def test_a_finished_records_results_of_each_kind() -> None:
    record = simulate_record({"preset": "standard", "rounds": 2}, 4, 3, "greedy",
                             names=["N", "f", "O", "g"])
    found = {kind: seated_results(record, kind) for kind in ScoreKind}
    assert {r.seats for r in found.values()} == {("N", "f", "O", "g")}
    assert found[ScoreKind.PLACEMENT].results == placement(record.ranks)
    assert found[ScoreKind.RAW].results == point_results(record.totals, 2)
    assert found[ScoreKind.ADJUSTED].results == record_adjusted_results(record)
    log = record_to_log(record)  # a stored match's log gives the same
    for kind in ScoreKind:
        assert log_seated_results(log, kind).results == pytest.approx(found[kind].results)
    record.status = MatchStatus.ABORTED
    with pytest.raises(ValueError, match="did not finish"):
        seated_results(record, ScoreKind.RAW)
    with pytest.raises(ValueError, match="no result"):
        log_seated_results(record_to_log(record), ScoreKind.RAW)
