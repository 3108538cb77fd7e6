"""Leak harness: what a seat is sent depends only on what that seat may know.

The same match is played twice through the real referee, with real bot
subprocesses, from two deals that differ only in what is hidden from seat s
(other hands, boneyard order). Every byte sent to seat s before its view of the
game first diverges must be identical in both runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections import defaultdict
from pathlib import Path

import pytest

from cfarena.engine import Rules, full_set, visible_events
from cfarena.engine.match import MatchState
from cfarena.server.referee import MatchRecord, TimeControl
from cfarena.v1 import arena_pb2 as pb

from .harness import Table, table

PLAYERS = 4
NAMES = [f"b{i}" for i in range(PLAYERS)]
SEEDS = 8


def _deal(rules: Rules, rng: random.Random) -> tuple[list[list], list]:  # type: ignore[type-arg]
    resolved = rules.resolve(PLAYERS)
    double = resolved.round_double_value(0)
    tiles = [t for t in full_set(resolved.set_size) if not (t.a == t.b == double)]
    rng.shuffle(tiles)
    h = resolved.hand_size
    hands = [tiles[i * h:(i + 1) * h] for i in range(PLAYERS)]
    return hands, tiles[PLAYERS * h:]


def _hide_differently(hands: list[list], boneyard: list, seat: int,  # type: ignore[type-arg]
                      rng: random.Random, everything: bool
                      ) -> tuple[list[list], list]:  # type: ignore[type-arg]
    """Same hand for `seat`; the boneyard order (and with `everything`, the
    other hands too) reshuffled."""
    if not everything:
        shuffled = list(boneyard)
        while len(shuffled) > 1 and shuffled == list(boneyard):
            rng.shuffle(shuffled)
        return [list(h) for h in hands], shuffled
    hidden = [t for s, hand in enumerate(hands) if s != seat for t in hand] + list(boneyard)
    rng.shuffle(hidden)
    out: list[list] = []  # type: ignore[type-arg]
    for s, hand in enumerate(hands):
        if s == seat:
            out.append(list(hand))
        else:
            out.append(hidden[: len(hand)])
            hidden = hidden[len(hand):]
    return out, hidden


async def _play_twice(t: Table, rules: Rules, seed: int, seat: int, everything: bool
                      ) -> list[tuple[MatchRecord, MatchState, list[bytes]]]:
    rng = random.Random(seed)
    hands, boneyard = _deal(rules, rng)
    first = (seat - seed // PLAYERS) % PLAYERS
    runs = []
    for variant in range(2):
        if variant:
            hands, boneyard = _hide_differently(hands, boneyard, seat, rng, everything)
        state = MatchState.from_deal(rules, PLAYERS, hands, boneyard, first)
        sent: dict[tuple[str, int], list[bytes]] = defaultdict(list)
        t.server.on_send = lambda bot, mid, s, data, sent=sent: sent[(mid, s)].append(data)
        for conn in t.server.connections():
            t.server.register_hook(conn)
        rec = await t.server.run_match("leak", rules, seed, NAMES,
                                       TimeControl(5000), initial_state=state)
        runs.append((rec, state, sent[("leak", seat)]))
    return runs


def _first_view_divergence(a: MatchState, b: MatchState, seat: int) -> int:
    ea, eb = visible_events(a, seat), visible_events(b, seat)
    for i, (x, y) in enumerate(zip(ea, eb, strict=False)):
        if x != y:
            return i
    return min(len(ea), len(eb))


def _play_all(tmp: Path, rules: Rules, everything: bool
              ) -> list[list[tuple[MatchRecord, MatchState, list[bytes]]]]:
    async def go() -> list[list[tuple[MatchRecord, MatchState, list[bytes]]]]:
        async with table(tmp, NAMES) as t:
            for name in NAMES:
                t.raw(name, "good")
            await t.server.wait_for_bots(NAMES, timeout=30)
            return [
                await _play_twice(t, rules, seed, seed % PLAYERS, everything)
                for seed in range(SEEDS)
            ]

    return asyncio.run(go())


def _compare(runs: list[list[tuple[MatchRecord, MatchState, list[bytes]]]]) -> int:
    """Assert the leak property over paired runs; return how many Turns were compared."""
    compared_turns = 0
    for seed, (run_a, run_b) in enumerate(runs):
        seat = seed % PLAYERS
        (rec_a, state_a, sent_a), (rec_b, state_b, sent_b) = run_a, run_b
        assert rec_a.status == rec_b.status == "finished"
        assert state_a.deals[0].hands[seat] == state_b.deals[0].hands[seat]
        # the hidden information did change
        assert (state_a.deals[0].hands, state_a.deals[0].boneyard) != (
            state_b.deals[0].hands, state_b.deals[0].boneyard)
        diverge = _first_view_divergence(state_a, state_b, seat)
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
            assert raw_a == raw_b, f"seed {seed} seat {seat}: turn {turn.turn_id} differs"
            compared_turns += 1
    return compared_turns


@pytest.mark.parametrize("everything", [False, True], ids=["boneyard", "hands+boneyard"])
@pytest.mark.parametrize("preset", ["standard", "maltese", "trains"])
def test_bytes_to_a_seat_depend_only_on_its_view(
    tmp_path: Path, preset: str, everything: bool
) -> None:
    runs = _play_all(tmp_path, Rules.preset(preset).with_options(rounds=1), everything)
    # most seeds compare at least the seat's first Turn (unless its first act is a draw)
    assert _compare(runs) >= SEEDS // 4


def test_the_harness_catches_a_planted_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """A referee that leaks the next seat's hand size ordering is caught."""
    import cfarena.server.referee.match as referee_match

    honest = referee_match.observe

    def leaky(state: MatchState, seat: int):  # type: ignore[no-untyped-def]
        obs = honest(state, seat)
        nxt = (seat + 1) % state.players
        # leak: the first tile of the next seat's hand, disguised as a hand size
        first = state.hand(nxt)[0] if state.hand(nxt) else None
        sizes = (*obs.hand_sizes[:-1], obs.hand_sizes[-1] + (first.pips if first else 0))
        return dataclasses.replace(obs, hand_sizes=sizes)

    monkeypatch.setattr(referee_match, "observe", leaky)
    runs = _play_all(tmp_path, Rules.preset("standard").with_options(rounds=1), True)
    with pytest.raises(AssertionError, match="differs"):
        _compare(runs)
