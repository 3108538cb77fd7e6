"""Play whole matches in-process with simple policies, no referee and no network (tests,
demos, benchmarks).

`simulate_record` and `simulate_log` play a match with a simple policy per seat
(the bundled greedy bot, a random or the first legal move) through the SDK's
in-process driver (`cfarena.sdk.local.play_match`, under the referee's own match
law); `record_to_log` makes the log.

    log = simulate_log({"preset": "maltese"}, players=3, seed=7)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ParamSpec

from cfarena.bots import make_bot
from cfarena.engine import Rules
from cfarena.match.log_format import record_to_log
from cfarena.match.record import MatchRecord
from cfarena.sdk import Bot, TimeControl, Turn
from cfarena.sdk.local import play_match

P = ParamSpec("P")

POLICIES = ("greedy", "random", "first")


class _RandomMove(Bot):
    """A uniformly random legal move from the match's one generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choose(self, turn: Turn) -> int:
        return self.rng.randrange(len(turn.legal_moves))


class _FirstMove(Bot):
    """The first legal move."""

    def choose(self, turn: Turn) -> int:
        return 0


def _policy_bot(policy: str, rng: random.Random) -> Bot:
    if policy == "greedy":
        return make_bot("greedy")
    return _RandomMove(rng) if policy == "random" else _FirstMove()


def simulate_record(
    rules_options: Mapping[str, Any],
    players: int,
    seed: int,
    policy: str | Sequence[str] = "greedy",
    *,
    timeouts: Collection[int] = (),
    strikes: int = 1,
    names: Sequence[str] | None = None,
) -> MatchRecord:
    """Play a match to its end; the referee's `MatchRecord` of it.

    `policy` is one name for every seat or one per seat (`greedy`, `random`,
    `first`). `timeouts` are decision numbers (the match's decisions counted
    from 1 over all seats, not turn ids, which count per seat) at which the
    deciding bot "times out": a TIMEOUT fault is recorded and the fallback move
    is played; the seat forfeits after `strikes` faults (see `play_match`).
    """
    rules = Rules.from_options(rules_options)
    seat_policies = [policy] * players if isinstance(policy, str) else list(policy)
    if len(seat_policies) != players:
        raise ValueError(f"policy: {len(seat_policies)} policies for {players} players")
    unknown = [p for p in seat_policies if p not in POLICIES]
    if unknown:
        raise ValueError(f"policy: unknown {unknown[0]!r} (known: {', '.join(POLICIES)})")
    rng = random.Random(seed)
    if names is None:
        names = [f"{p}-{s}" for s, p in enumerate(seat_policies)]
    played = play_match([_policy_bot(p, rng) for p in seat_policies], rules, seed,
                        f"sim-{rules.name}-{players}p-{seed}", TimeControl(strikes=strikes),
                        names=names, timeouts=timeouts)
    return played.record


def _as_log(simulate: Callable[P, MatchRecord]) -> Callable[P, dict[str, Any]]:
    def log(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        return record_to_log(simulate(*args, **kwargs))

    log.__doc__ = f"The game log of a match played in-process (see `{simulate.__name__}`)."
    return log


simulate_log = _as_log(simulate_record)
