"""Luck-adjusted point results: a match's points minus what its draws gave.

The referee knows the boneyard. When a seat draws, every tile still in the
boneyard was equally likely to come up (the shuffle is uniform and nothing that
was played depends on the boneyard's order), so the expectation of any value
over that draw is exact: the mean over the boneyard's tiles. A draw's luck for
seat s is V_s(after the tile that came) - mean over the boneyard's tiles u of
V_s(after u) (AIVAT's and backgammon's luck: value after a chance event minus
its expectation over all outcomes). Each such term has conditional mean zero
given everything before the draw, whatever V is, so the adjusted total, the
points plus the sum of a seat's luck terms, has exactly the expectation of the
points: it is unbiased (tests/sprt/test_luck.py checks it over thousands of
simulated matches). V only decides how much noise is removed.

V is fixed before any test, from public features of the draw: a drawn tile
that does not fit the layout stays in the hand (its pips, 0-0 at the rules'
`double_blank`, count against the seat at the round's end) and costs a turn;
one that fits is played. With W_s the pips of the unplayable tiles seat s has
drawn and U_s their number, V_s, in points seat s is ahead of the others'
mean, is

    V_s = PIP_WEIGHT * (W_s - mean of the other seats' W)
          + STUCK_WEIGHT * (U_s - mean of the other seats' U),

so a draw moves the drawer's V one way and the others' by 1 / (players - 1)
of it the other way. A seat's luck is the sum of its terms (positive: its
draws were better than expected, they saved it points), and its adjusted total
is its points plus its luck (a lucky seat is charged what luck saved it). The
two weights are the least-squares slopes of a deal group's mean point
difference on its NEW's minus its OLD's net sums (a control variate of the
group's score), fitted once on deal groups played with seeds of their own
(`benchmarks/fit_luck.py`, which prints them) and frozen here.

Richer values were measured and not kept (docs/TESTING_BOTS.md): more
features of the draw (doubles, the other seats' hand sizes, the boneyard left,
a fitting tile's pips) and a deterministic greedy rollout to the round's end
after each possible tile (common random numbers: the rest of the boneyard in
one fixed order) remove at most a few percent more of a group's variance, the
rollout at about 50 ms of CPU per match.

The deal is not adjusted: within a deal group NEW and OLD hold every hand
(`deal_group`), so its luck cancels in their difference, and setup draws (the
draw-off, a holder's search for the double) are part of the deal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cfarena.engine import Move, MoveKind, Tile, apply_move, new_match
from cfarena.engine.state import MatchState
from cfarena.match.record import MatchRecord, MatchStatus
from cfarena.match.resimulation import LogError, start_match
from cfarena.server.sprt.deal_group import point_results

# Fitted by benchmarks/fit_luck.py (1500 deal groups of smart vs greedy with greedy
# in the other seats, standard rules, 4 players, single rounds, seeds "fit-luck/*";
# 18.6% of the group scores' variance removed in the fit): points per pip of an
# unplayable drawn tile and per unplayable draw, both net of the other seats', as a
# control variate of the group's point difference. Frozen: never refit on a test.
PIP_WEIGHT = -0.5588
STUCK_WEIGHT = 1.5787


def tile_pips(tile: Tile, double_blank: int) -> int:
    """A tile's pips as they count against a hand (the 0-0 counts `double_blank`)."""
    return double_blank if tile.a == tile.b == 0 else tile.pips


def open_values(state: MatchState) -> frozenset[int]:
    """The values a tile must carry to be played now (the pending double's, if any)."""
    layout = state.layout()
    pending = state.pending
    if pending is not None:
        return frozenset({layout[pending].open_value})
    return frozenset(p.open_value for p in layout if p.children < p.capacity)


def draw_features(state: MatchState) -> tuple[tuple[float, float], tuple[float, float]]:
    """For the draw the seat to move is about to make: ((pips, stuck) of the tile that
    comes, (their means over the boneyard)), with (pips, stuck) = (0, 0) for a tile
    that fits and (its pips, 1) for one that does not."""
    boneyard = state.boneyard()
    if not boneyard:
        raise ValueError("no tile to draw")
    blank = state.rules.double_blank
    fits = open_values(state)

    def features(tile: Tile) -> tuple[float, float]:
        if tile.a in fits or tile.b in fits:
            return 0.0, 0.0
        return float(tile_pips(tile, blank)), 1.0

    each = [features(t) for t in boneyard]
    mean = (sum(f[0] for f in each) / len(each), sum(f[1] for f in each) / len(each))
    return each[0], mean


def luck_sums(state: MatchState, moves: Iterable[str]) -> list[tuple[float, float]]:
    """Play `moves` (Move keys) from the fresh `state`; per seat, the sums over its
    draws of (pips, stuck) minus their expectations (`draw_features`)."""
    sums = [[0.0, 0.0] for _ in range(state.players)]
    for key in moves:
        move = Move.parse(key)
        if move.kind is MoveKind.DRAW:
            seat = state.current_seat
            if seat is None:
                raise LogError(f"a draw ({key}) after the round ended")
            came, expected = draw_features(state)
            sums[seat][0] += came[0] - expected[0]
            sums[seat][1] += came[1] - expected[1]
        apply_move(state, move)
    return [(p, s) for p, s in sums]


def luck_points(sums: Sequence[tuple[float, float]]) -> tuple[float, ...]:
    """Each seat's luck in points (positive: its draws saved it points) from its
    `luck_sums`: V's change over the match's draws, relative to their expectation."""
    players = len(sums)
    out = []
    for s in range(players):
        others = [sums[j] for j in range(players) if j != s]
        net_pips = sums[s][0] - sum(o[0] for o in others) / len(others)
        net_stuck = sums[s][1] - sum(o[1] for o in others) / len(others)
        out.append(PIP_WEIGHT * net_pips + STUCK_WEIGHT * net_stuck)
    return tuple(out)


def _luck(state: MatchState, moves: Iterable[str]) -> tuple[float, ...]:
    return luck_points(luck_sums(state, moves))


def record_luck(record: MatchRecord) -> tuple[float, ...]:
    """Each seat's luck in points in a match record (played so far, if it did not finish)."""
    state = new_match(record.rules, record.players, record.seed)
    return _luck(state, (a.move for a in record.actions))


def log_luck(log: Mapping[str, Any]) -> tuple[float, ...]:
    """Each seat's luck in points in a game log (gamelog.LogError if it cannot be replayed)."""
    return _luck(start_match(log), (str(a.get("move")) for a in log.get("actions", [])))


def adjusted_totals(totals: Sequence[float], luck: Sequence[float]) -> tuple[float, ...]:
    """Each seat's luck-adjusted total: its points plus its luck in points."""
    return tuple(t + c for t, c in zip(totals, luck, strict=True))


def seat_luck(totals: Sequence[float], log: Mapping[str, Any]
              ) -> list[tuple[float, float]]:
    """Per seat of a finished match's game log, in seat order: the luck of its draws in
    points (positive: they saved it points) and its luck-adjusted total (what `cfarena
    show` and the match page print); gamelog.LogError if the log does not replay."""
    luck = log_luck(log)
    return list(zip(luck, adjusted_totals(totals, luck), strict=True))


def adjusted_results(totals: Sequence[float], rounds: int,
                     luck: Sequence[float]) -> tuple[float, ...]:
    """Each seat's luck-adjusted result: `deal_group.point_results` of its adjusted total."""
    return point_results(adjusted_totals(totals, luck), rounds)


def record_adjusted_results(record: MatchRecord) -> tuple[float, ...]:
    """The luck-adjusted results of a finished match record."""
    if record.status is not MatchStatus.FINISHED:
        raise ValueError(f"match {record.match_id} did not finish ({record.status.value})")
    return adjusted_results(record.totals, len(record.round_scores), record_luck(record))
