"""Deterministic deals (RULES.md §4): per-round seeds, shuffling, the three start modes.

Every deal is a pure function of (match seed, round index, rules, players):

- the round's random stream is `random.Random(k)` where `k` is the first 8
  bytes (big-endian) of `sha256(f"cfarena/{seed}/{round_index}")`; only
  `getrandbits` is used, which CPython keeps stable across versions;
- shuffles are our own Fisher-Yates (`shuffle_in_place`), never
  `random.shuffle`, so no library change can alter a deal;
- seat `i` receives deck positions `[i*h, (i+1)*h)` and the rest is the
  boneyard in draw order, so a seat's hand depends only on its index (seat
  rotation keeps hands with seats: duplicate play).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from cfarena.engine.rules import ResolvedRules, Start
from cfarena.engine.tile_codes import STRIDE, code_of, set_codes, tile_of
from cfarena.engine.tiles import Tile


@dataclass(frozen=True, slots=True)
class RoundDeal:
    """How one round was set up, for the match-end disclosure and game logs.

    `hands` are the hands as dealt (before any setup draw; under `holder` the
    holder's hand still contains the round double), `boneyard` the boneyard
    after dealing in draw order (index 0 is drawn first), `first_seat` the seat
    that made the first move after the centre was placed, `centre_seat` the
    seat that put the round double in the centre (None when it was placed
    before dealing or by `MatchState.from_deal`), `draw_off` the public
    draw-off draws `(seat, tile)` (the last one is the round double) and
    `setup_draws` the draws made under `holder` when nobody held the double.
    """

    round_index: int
    round_double: Tile
    hands: tuple[tuple[Tile, ...], ...]
    boneyard: tuple[Tile, ...]
    first_seat: int
    centre_seat: int | None = None
    draw_off: tuple[tuple[int, Tile], ...] = ()
    setup_draws: tuple[tuple[int, Tile], ...] = field(default=())


@dataclass(slots=True)
class RoundSetup:
    """A round's deal in tile codes (engine-internal)."""

    round_index: int
    double: int  # code of the round double
    hands: list[list[int]]
    boneyard: list[int]  # draw order: index 0 first
    first_seat: int
    centre_seat: int | None
    draw_off: list[tuple[int, int]]
    setup_draws: list[tuple[int, int]]

    def to_deal(self) -> RoundDeal:
        """The public-facing RoundDeal (tiles instead of codes)."""
        return RoundDeal(
            round_index=self.round_index,
            round_double=tile_of(self.double),
            hands=tuple(tuple(tile_of(c) for c in h) for h in self.hands),
            boneyard=tuple(tile_of(c) for c in self.boneyard),
            first_seat=self.first_seat,
            centre_seat=self.centre_seat,
            draw_off=tuple((s, tile_of(c)) for s, c in self.draw_off),
            setup_draws=tuple((s, tile_of(c)) for s, c in self.setup_draws),
        )


def round_seed(seed: int, round_index: int) -> int:
    """The 64-bit seed of round `round_index` of the match seeded `seed`."""
    digest = hashlib.sha256(f"cfarena/{seed}/{round_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def randbelow(rng: random.Random, n: int) -> int:
    """A uniform int in [0, n) using only `getrandbits` (stable across versions)."""
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def shuffle_in_place(items: list[int], rng: random.Random) -> None:
    """Fisher-Yates shuffle over `randbelow`."""
    for i in range(len(items) - 1, 0, -1):
        j = randbelow(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def _draw_in_turn_until(
    pile: list[int], double: int, start_seat: int, players: int, draws: list[tuple[int, int]]
) -> int:
    """Seats draw from `pile` in turn from `start_seat` until `double` comes up.

    Appends each `(seat, code)` to `draws`; returns the seat that drew the double.
    """
    seat = start_seat
    for code in pile:
        draws.append((seat, code))
        if code == double:
            break
        seat = (seat + 1) % players
    return seat


def deal_round(rules: ResolvedRules, seed: int, round_index: int) -> RoundSetup:
    """The deal of round `round_index` under `rules.start`."""
    rng = random.Random(round_seed(seed, round_index))
    players = rules.players
    hand = rules.hand_size
    value = rules.round_double_value(round_index)
    double = value * STRIDE + value
    start_seat = round_index % players
    everything = set_codes(rules.set_size)
    without_double = [c for c in everything if c != double]
    draw_off: list[tuple[int, int]] = []
    setup_draws: list[tuple[int, int]] = []
    centre_seat: int | None = None

    if rules.start is Start.HOLDER:
        deck = everything
        shuffle_in_place(deck, rng)
    else:
        if rules.start is Start.DRAW_OFF:
            pile = list(everything)
            shuffle_in_place(pile, rng)
            centre_seat = _draw_in_turn_until(pile, double, start_seat, players, draw_off)
        deck = without_double
        shuffle_in_place(deck, rng)

    hands = [deck[i * hand : (i + 1) * hand] for i in range(players)]
    boneyard = deck[players * hand :]

    if rules.start is Start.CENTRE_FIRST:
        first = start_seat
    elif rules.start is Start.DRAW_OFF:
        assert centre_seat is not None
        first = centre_seat
    else:
        holder = next((s for s in range(players) if double in hands[s]), None)
        if holder is None:
            # nobody holds it: seats draw in turn from the boneyard until it is drawn
            holder = _draw_in_turn_until(boneyard, double, start_seat, players, setup_draws)
        centre_seat = holder
        first = (holder + 1) % players
    return RoundSetup(
        round_index=round_index,
        double=double,
        hands=hands,
        boneyard=boneyard,
        first_seat=first,
        centre_seat=centre_seat,
        draw_off=draw_off,
        setup_draws=setup_draws,
    )


def explicit_setup(
    resolved: ResolvedRules,
    hands: Sequence[Sequence[Tile]],
    boneyard: Sequence[Tile],
    first_seat: int,
    round_index: int,
) -> RoundSetup:
    """The setup of an explicit deal (`MatchState.from_deal`); ValueError naming what is wrong.

    The tiles must be exactly the set minus the round double of `round_index`.
    """
    players = resolved.players
    if len(hands) != players:
        raise ValueError(f"hands: {len(hands)} hands given for {players} players")
    if not (0 <= first_seat < players):
        raise ValueError(f"first_seat: must be a seat 0..{players - 1}, got {first_seat}")
    if round_index < 0:
        raise ValueError(f"round_index: must be >= 0, got {round_index}")
    value = resolved.round_double_value(round_index)
    double = value * STRIDE + value
    expected = set(set_codes(resolved.set_size))
    seen: set[int] = set()
    where = [*(f"hand of seat {s}" for s in range(players)), "boneyard"]
    for place, tiles in zip(where, [*hands, boneyard], strict=True):
        for tile in tiles:
            code = code_of(tile)
            if code not in expected:
                raise ValueError(
                    f"{place}: {tile} is not a tile of the double-{resolved.set_size} set"
                )
            if code == double:
                raise ValueError(f"{place}: {tile} is the round double, already in the centre")
            if code in seen:
                raise ValueError(f"{place}: {tile} appears more than once")
            seen.add(code)
    missing = sorted(expected - seen - {double})
    if missing:
        names = ", ".join(str(tile_of(c)) for c in missing)
        raise ValueError(f"tiles missing from the deal: {names}")
    return RoundSetup(
        round_index=round_index,
        double=double,
        hands=[[code_of(t) for t in h] for h in hands],
        boneyard=[code_of(t) for t in boneyard],
        first_seat=first_seat,
        centre_seat=None,
        draw_off=[],
        setup_draws=[],
    )
