"""A bot test's schedule as storage holds it: deals that a fixed seed does not repeat
across tests of other bots, the seats a bot really holds, and phases that keep a
batch's views of a deal apart whenever the next batch is scheduled."""

from __future__ import annotations

import dataclasses

from cfarena.engine import Rules
from cfarena.server.sprt.match_results import ScoreKind
from cfarena.server.sprt.sequential import SprtBounds
from cfarena.server.tournament.config import BotSpec
from cfarena.server.tournament.schedule import group_key, group_phases
from cfarena.server.tournament.sprt_test import SprtConfig, batch_plans, group_seed


def _config(new: BotSpec, old: BotSpec, *, players: int = 2, field: tuple[BotSpec, ...] = (),
            seed: int | None = 7) -> SprtConfig:
    return SprtConfig(new, old, field, Rules.preset("standard"), players, SprtBounds(0, 5),
                      ScoreKind.RAW, 1000, seed)


def _deals(config: SprtConfig, seed_fixed: bool) -> list[int]:
    stored = {"seed": 7, "seed_fixed": seed_fixed, "batch": {"groups": 3}}
    ids = {b.name: i for i, b in enumerate((config.new, config.old, *config.field))}
    return [p.seed for p in batch_plans(config, stored, ids, 0, 10)]


def test_a_fixed_seed_gives_other_deals_to_tests_of_other_bots() -> None:
    smart, greedy, random = BotSpec("smart"), BotSpec("greedy"), BotSpec("random")
    mine = BotSpec("smart", "python v2.py", (("v2.py", "ab" * 32),))
    one = _deals(_config(smart, greedy), True)
    assert one == _deals(_config(smart, greedy), True)  # the same test: the same deals
    assert len(set(one)) == 3  # a deal per group, shared by its seatings
    bounds = dataclasses.replace(_config(smart, greedy), bounds=SprtBounds(0, 10))
    fielded = _config(smart, greedy, players=3, field=(random,))
    for other in (_config(smart, random), _config(greedy, smart), _config(mine, greedy),
                  bounds, fielded):  # other bots, other files, other terms, another field
        assert not set(_deals(other, True)) & set(one)
    # a drawn seed is mixed with nothing: the deals are the seed's alone
    drawn = _config(smart, greedy, seed=None)
    assert _deals(drawn, False) == _deals(_config(smart, random, seed=None), False)
    assert _deals(drawn, False)[::2] == [group_seed(7, g) for g in range(3)]


def test_seats_per_bot_is_the_most_a_bot_holds() -> None:
    new, old, filler = BotSpec("smart"), BotSpec("greedy"), BotSpec("random")
    six = _config(new, old, players=6, field=(filler,))
    assert six.seats_per_bot == 4 and six.to_json()["seats_per_bot"] == 4
    assert six.tournament().fill
    two = _config(new, old)
    assert two.seats_per_bot == 1 and "seats_per_bot" not in two.to_json()
    assert not two.tournament().fill


def test_a_later_batch_is_played_after_every_phase_of_an_earlier_one() -> None:
    per_group, batch = 4, 3
    keys = [group_key(g, s) for g in range(7) for s in range(per_group)]
    phase = group_phases(keys, batch, per_group)
    for g in range(7):
        # one seating of each deal per phase: a group's seatings in distinct phases
        assert len({phase[group_key(g, s)] for s in range(per_group)}) == per_group
        for later in range(g + 1, 7):
            if later // batch > g // batch:
                assert min(phase[group_key(later, s)] for s in range(per_group)) > \
                    max(phase[group_key(g, s)] for s in range(per_group))
            else:  # the same batch: seating s of both in one phase
                assert phase[group_key(later, 1)] == phase[group_key(g, 1)]
