"""Leak harness: what a seat is sent depends only on what that seat may know.

The same match is played twice through the real referee, with real bot
subprocesses, from two initial states that differ only in what is hidden from
seat s. Every byte sent to seat s before its view of the game first diverges
must be identical in both runs. What differs, per case:

- the boneyard order, or the other hands and the boneyard (random deals);
- the others' hidden *choices*: under play_drawn = may, seat s-1 draws a tile
  that fits and keeps it (a decision, shown to s as a draw and a pass) in one
  run, and draws a tile that does not fit and must pass in the other.

Every preset is played with 2, 4 and 8 players. The bots answer move 0, or
PASS whenever it is offered (`rawbot.py keep`), so they keep every drawn tile
they may keep. One referee and its 8 bot processes serve every test of the module
(`keepers`): a match of N players seats the first N.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence

import pytest

from cfarena.engine import Rules, Tile, full_set, visible_events
from cfarena.engine.state import MatchState
from cfarena.server.referee import ActionRecord, MatchRecord, TimeControl
from cfarena.v1 import arena_pb2 as pb

from .harness import HeldTable, Table, held_table

PRESETS = ["standard", "maltese", "trains"]
PLAYER_COUNTS = [2, 4, 8]
# deals per case: 8-player matches are long, and each deal is played twice
SEEDS = {2: 10, 4: 8, 8: 5}

Deal = tuple[list[list[Tile]], list[Tile], int]  # hands, boneyard, first seat
Run = tuple[MatchRecord, MatchState, list[bytes]]


def _names(players: int) -> list[str]:
    return [f"b{i}" for i in range(players)]


def _rules(preset: str, **options: object) -> Rules:
    return Rules.preset(preset).with_options(rounds=1, **options)


def _tiles(rules: Rules, players: int, rng: random.Random) -> tuple[int, int, list[Tile]]:
    """Hand size, the round double's value, and the shuffled tiles but that double."""
    resolved = rules.resolve(players)
    double = resolved.round_double_value(0)
    tiles = [t for t in full_set(resolved.set_size) if not (t.a == t.b == double)]
    rng.shuffle(tiles)
    return resolved.hand_size, double, tiles


# ------------------------------------------------------------ random deals
def _random_deals(rules: Rules, players: int, seed: int, seat: int, everything: bool
                  ) -> tuple[Deal, Deal]:
    """A deal, and one with the same hand for `seat` and the boneyard order (with
    `everything`, the other hands too) reshuffled."""
    rng = random.Random(seed)
    h, _, tiles = _tiles(rules, players, rng)
    hands = [tiles[i * h:(i + 1) * h] for i in range(players)]
    boneyard = tiles[players * h:]
    first = (seat - seed // players) % players
    if not everything:
        shuffled = list(boneyard)
        while len(shuffled) > 1 and shuffled == boneyard:
            rng.shuffle(shuffled)
        return (hands, boneyard, first), ([list(x) for x in hands], shuffled, first)
    hidden = [t for s, hand in enumerate(hands) if s != seat for t in hand] + boneyard
    rng.shuffle(hidden)
    other: list[list[Tile]] = []
    for s, hand in enumerate(hands):
        if s == seat:
            other.append(list(hand))
        else:
            other.append(hidden[:len(hand)])
            hidden = hidden[len(hand):]
    return (hands, boneyard, first), (other, hidden, first)


# ----------------------------------------------------------- hidden choice
def _fits(tile: Tile, value: int) -> bool:
    return value in (tile.a, tile.b)


def _choice_deals(rules: Rules, players: int, seed: int, seat: int) -> tuple[Deal, Deal]:
    """Seat `seat - 1` moves first with nothing to play (only the centre double
    is out), so it draws; in the first deal the drawn tile fits (it may keep
    it), in the second it does not (it must pass). `seat` can play next."""
    rng = random.Random(seed)
    h, double, tiles = _tiles(rules, players, rng)
    other = (seat - 1) % players
    fit = [t for t in tiles if _fits(t, double)]
    rest = [t for t in tiles if not _fits(t, double)]
    drawn = fit.pop()
    hands: list[list[Tile]] = [[] for _ in range(players)]
    hands[seat].append(fit.pop())
    hands[other] = [rest.pop() for _ in range(h)]
    pool = fit + rest
    rng.shuffle(pool)
    for hand in hands:
        while len(hand) < h:
            hand.append(pool.pop())
    keep = [drawn, *pool]
    # the same tiles with a non-fitting one drawn first instead (swapped with
    # the fitting one, deeper in the boneyard: hidden from `seat` either way)
    j = next(i for i, t in enumerate(keep) if i and not _fits(t, double))
    forced = list(keep)
    forced[0], forced[j] = forced[j], forced[0]
    return (hands, keep, other), ([list(x) for x in hands], forced, other)


# ---------------------------------------------------------------- playing
async def _play_pair(t: Table, rules: Rules, players: int, seed: int, seat: int,
                     deals: tuple[Deal, Deal]) -> tuple[Run, Run]:
    runs: list[Run] = []
    for hands, boneyard, first in deals:
        state = MatchState.from_deal(rules, players, hands, boneyard, first)
        sent: dict[tuple[str, int], list[bytes]] = defaultdict(list)
        t.server.on_send = lambda bot, mid, s, data, sent=sent: sent[(mid, s)].append(data)
        for conn in t.server.connections():
            t.server.register_hook(conn)
        rec = await t.server.run_match("leak", rules, seed, _names(players),
                                       TimeControl(5000), initial_state=state)
        runs.append((rec, state, sent[("leak", seat)]))
    return runs[0], runs[1]


MakeDeals = Callable[[int, int], tuple[Deal, Deal]]  # (seed, seat) -> the two deals


@pytest.fixture(scope="module")
def keepers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeldTable]:
    """A referee and `rawbot.py keep` bots b0..b7, connected, for the module's tests."""
    names = _names(max(PLAYER_COUNTS))
    with held_table(tmp_path_factory.mktemp("leaks"), names) as held:
        for name in names:
            held.table.raw(name, "keep")
        held.run(held.table.server.wait_for_bots(names, timeout=30))
        yield held


def _play_all(held: HeldTable, rules: Rules, players: int, make: MakeDeals,
              seeds: Sequence[int]) -> list[tuple[int, Run, Run]]:
    """For each seed (observed seat: seed mod players), both runs: (seat, run a, run b)."""
    async def go() -> list[tuple[int, Run, Run]]:
        out = []
        for seed in seeds:
            seat = seed % players
            a, b = await _play_pair(held.table, rules, players, seed, seat, make(seed, seat))
            out.append((seat, a, b))
        return out

    return held.run(go())


def _first_view_divergence(a: MatchState, b: MatchState, seat: int) -> int:
    ea, eb = visible_events(a, seat), visible_events(b, seat)
    for i, (x, y) in enumerate(zip(ea, eb, strict=False)):
        if x != y:
            return i
    return min(len(ea), len(eb))


def _compare(pairs: list[tuple[int, Run, Run]]) -> list[list[pb.Turn]]:
    """Assert the leak property over paired runs; per pair, the Turns compared."""
    compared: list[list[pb.Turn]] = []
    for seat, (rec_a, state_a, sent_a), (rec_b, state_b, sent_b) in pairs:
        assert rec_a.status == rec_b.status == "finished"
        assert not rec_a.faults and not rec_b.faults
        assert state_a.deals[0].hands[seat] == state_b.deals[0].hands[seat]
        # the hidden information did change
        assert (state_a.deals[0].hands, state_a.deals[0].boneyard) != (
            state_b.deals[0].hands, state_b.deals[0].boneyard)
        diverge = _first_view_divergence(state_a, state_b, seat)
        turns: list[pb.Turn] = []
        for raw_a, raw_b in zip(sent_a, sent_b, strict=False):
            msg = pb.RefereeMessage.FromString(raw_a)
            kind = msg.WhichOneof("kind")
            if kind == "match_start":
                assert raw_a == raw_b
                continue
            if kind != "turn":
                break
            turn = msg.turn
            # a Turn reflects the events before it; while those are the same
            # for this seat, the bytes must be too
            if turn.observation.event_count > diverge:
                break
            assert raw_a == raw_b, (
                f"{rec_a.rules.name} seat {seat}: turn {turn.turn_id} differs: "
                f"{turn} vs {pb.RefereeMessage.FromString(raw_b).turn}")
            turns.append(turn)
        compared.append(turns)
    return compared


@pytest.mark.parametrize("everything", [False, True], ids=["boneyard", "hands+boneyard"])
@pytest.mark.parametrize("players", PLAYER_COUNTS, ids=[f"{n}p" for n in PLAYER_COUNTS])
@pytest.mark.parametrize("preset", PRESETS)
def test_bytes_to_a_seat_depend_only_on_its_view(
    keepers: HeldTable, preset: str, players: int, everything: bool
) -> None:
    rules = _rules(preset)
    pairs = _play_all(keepers, rules, players,
                      lambda seed, seat: _random_deals(rules, players, seed, seat, everything),
                      range(SEEDS[players]))
    compared = _compare(pairs)
    # many deals compare at least the seat's first Turn (not when its first act
    # is a draw, or when the others' hidden tiles already changed what it saw)
    assert sum(len(turns) for turns in compared) >= max(1, len(pairs) // 4)


def _kept_tile_cases(held: HeldTable, preset: str, players: int) -> list[list[pb.Turn]]:
    """Play the hidden-choice pairs; assert the situation occurred; compare."""
    rules = _rules(preset, play_drawn="may")
    pairs = _play_all(held, rules, players,
                      lambda seed, seat: _choice_deals(rules, players, seed, seat),
                      range(SEEDS[players]))
    for seat, (rec_a, _, _), (rec_b, _, _) in pairs:
        other = (seat - 1) % players
        # run a: seat-1 drew, was asked (a Turn), and chose to keep the tile;
        # run b: it drew and passed without being asked; then `seat` decided
        draw, kept, mine = rec_a.actions[:3]
        assert draw == ActionRecord(other, "draw", False, None, None)
        assert (kept.seat, kept.move, kept.decided, kept.fallback) == (other, "pass", True, False)
        assert rec_b.actions[:2] == [ActionRecord(other, "draw", False, None, None),
                                     ActionRecord(other, "pass", False, None, None)]
        assert mine.seat == rec_b.actions[2].seat == seat
        assert mine.decided and rec_b.actions[2].decided
    return _compare(pairs)


@pytest.mark.parametrize("players", PLAYER_COUNTS, ids=[f"{n}p" for n in PLAYER_COUNTS])
@pytest.mark.parametrize("preset", PRESETS)
def test_the_others_hidden_choices_do_not_reach_a_seat(
    keepers: HeldTable, preset: str, players: int
) -> None:
    compared = _kept_tile_cases(keepers, preset, players)
    for turns in compared:
        # the seat's first Turn came after the other's kept tile, and matched
        assert turns, "the seat's first Turn was not compared"
        assert turns[0].turn_id == 1
        assert [e.kind for e in turns[0].events][-2:] == [pb.EVENT_KIND_DRAW, pb.EVENT_KIND_PASS]


def test_the_harness_catches_a_planted_leak(keepers: HeldTable,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A referee that leaks the next seat's hand, disguised as a hand size, is caught."""
    import cfarena.server.referee.match_runner as referee_match

    honest = referee_match.observe

    def leaky(state: MatchState, seat: int):  # type: ignore[no-untyped-def]
        obs = honest(state, seat)
        nxt = (seat + 1) % state.players
        # leak: the first tile of the next seat's hand, disguised as a hand size
        first = state.hand(nxt)[0] if state.hand(nxt) else None
        sizes = (*obs.hand_sizes[:-1], obs.hand_sizes[-1] + (first.pips if first else 0))
        return dataclasses.replace(obs, hand_sizes=sizes)

    monkeypatch.setattr(referee_match, "observe", leaky)
    rules = _rules("standard")
    pairs = _play_all(keepers, rules, 4,
                      lambda seed, seat: _random_deals(rules, 4, seed, seat, True), range(4))
    with pytest.raises(AssertionError, match="differs"):
        _compare(pairs)


def test_the_harness_catches_a_match_wide_turn_counter(
    keepers: HeldTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turn ids numbered over the match (as before) reveal the others' kept tiles."""
    from cfarena.match.law import MatchLaw

    counters: dict[int, int] = defaultdict(int)

    def match_wide(self: MatchLaw, seat: int) -> int:
        counters[id(self)] += 1
        return counters[id(self)]

    monkeypatch.setattr(MatchLaw, "_next_turn_id", match_wide)
    with pytest.raises(AssertionError, match="turn 2 differs"):
        _kept_tile_cases(keepers, "maltese", 4)
