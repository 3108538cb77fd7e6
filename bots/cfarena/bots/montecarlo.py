"""MonteCarloBot: determinized rollouts to the end of the round, within a time budget.

For each decision with more than one legal move:

1. the candidate moves are ordered by `SmartPolicy` (the SmartBot heuristic)
   and, if there are many, only the best `max_candidates` are searched;
2. a "world" is sampled: the unseen tiles dealt at random into the other
   hands and the boneyard. With `sampler="voids"` (the default) the deal
   respects the public voids: a seat that drew or passed on a value since its
   last unknown draw (`_features.read_voids` confidence 1) is dealt no tile of
   that value (`constrained_world`, which steers `cfarena.engine.determinize`
   through a scripted shuffle and checks the result; if the voids cannot be
   met, a plain `determinize` world is used). Every candidate is applied to a
   copy of that same world (common random numbers) and the round is played
   out with a fast rollout policy (heaviest tile first, doubles preferred
   when the player can feed them, 0-0 counted at its value);
3. a move's value is the mean, over the sampled worlds, of
   (mean score of the others - own score) at the end of the round; worlds are
   weighted by how well they fit the weaker (decayed) voids: `void_weight`,
   and `prior_weight` times the SmartBot score is added, which steadies the
   choice when only a few worlds fit in the budget;
4. sampling stops at the thinking budget, at `max_samples` worlds, or at the
   turn's deadline minus a safety margin, whichever comes first; a new world
   is not started when the mean time of a complete world would overrun the
   stop; only complete worlds (every candidate rolled out) count. If not one
   world fits in the time, the SmartBot move is played. A single legal move
   is answered at once.

The budget is the constructor's `budget_ms`, else the environment variable
`CFARENA_MC_BUDGET_MS`, else 50 ms (`cfarena run-tournament` gives the bundled
montecarlo the organiser's value: the registry's `settings`). Each decision's
random generator is seeded from (match id, seat, event count), so a decision is
reproducible whenever it ends on `max_samples` rather than on the clock.

    python -m cfarena.sdk run cfarena.bots.montecarlo --token T
    CFARENA_MC_BUDGET_MS=200 python -m cfarena.bots.montecarlo --token T
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence

from cfarena.bots._features import match_seed
from cfarena.bots.smart import SmartPolicy
from cfarena.engine import (
    MatchState,
    Move,
    MoveKind,
    Observation,
    Tile,
    apply_move,
    determinize,
    full_set,
    legal_moves,
)
from cfarena.sdk import Bot, Turn
from cfarena.sdk.cli import run_main

DEFAULT_BUDGET_MS = 50.0
BUDGET_ENV = "CFARENA_MC_BUDGET_MS"
# keep this much of the deadline unused (plus a share of it): the answer must still travel
SAFETY_MS = 25.0
SAFETY_SHARE = 0.1


def _budget_from(values: Mapping[str, str]) -> float:
    """The budget that `values` (an environment) give: ValueError if not a number >= 0."""
    text = values.get(BUDGET_ENV, "").strip()
    if not text:
        return DEFAULT_BUDGET_MS
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{BUDGET_ENV} must be a number of milliseconds, got {text!r}") from None
    if not 0 <= value < math.inf:  # NaN too
        raise ValueError(f"{BUDGET_ENV} must be a finite number >= 0, got {text!r}")
    return value


def _budget_from_env() -> float:
    return _budget_from(os.environ)


def settings_problem(values: Mapping[str, str]) -> str | None:
    """Why the organiser's settings `values` cannot be used (the registry's check)."""
    try:
        _budget_from(values)
    except ValueError as exc:
        return str(exc)
    return None


def rollout_move(state: MatchState, moves: Sequence[Move]) -> Move:
    """The fast rollout policy: heaviest tile, a double first if its player can feed it."""
    blank = state.rules.double_blank
    best = moves[0]
    best_key = -1.0
    counts: list[int] | None = None
    for move in moves:
        tile = move.tile
        if tile is None:
            continue
        key = float(tile.a + tile.b) if tile.b else float(blank if tile.a == 0 else tile.a)
        if tile.a == tile.b:
            if counts is None:
                seat = state.current_seat
                assert seat is not None
                counts = [0] * (state.rules.set_size + 1)
                for t in state.hand(seat):
                    counts[t.a] += 1
                    if t.b != t.a:
                        counts[t.b] += 1
            key += 6.0 if counts[tile.a] >= 2 else -2.0
        if key > best_key:
            best, best_key = move, key
    return best


class _ScriptedRandom(random.Random):
    """A Random whose `getrandbits` answers from a script first (to steer `determinize`)."""

    def __init__(self, seed: int, script: list[int]) -> None:
        super().__init__(seed)
        self._script = script
        self._pos = 0

    def getrandbits(self, k: int) -> int:
        if self._pos < len(self._script):
            value = self._script[self._pos]
            self._pos += 1
            return value
        return super().getrandbits(k)


def _codes_key(tile: Tile) -> tuple[int, int]:
    return (tile.a, tile.b)


def constrained_world(
    obs: Observation, rng: random.Random, hard: list[list[bool]]
) -> MatchState | None:
    """A `determinize` world in which no other seat holds a value it surely lacks.

    `hard[s][v]` marks seat `s` as certainly holding no tile of value `v` (it drew
    or passed on it since its last unknown draw). The unseen tiles are shuffled
    and dealt seat by seat, most constrained seat first, each seat taking the first
    tiles it may hold; the rest form the boneyard. The deal is fed to
    `determinize` through a scripted Fisher-Yates, and checked; None if the
    voids cannot be met or the engine dealt differently (then the caller falls
    back to an unconstrained world).
    """
    seat = obs.seat
    players = obs.rules.players
    placed = {p.tile for p in obs.layout}
    own = set(obs.hand)
    unseen = sorted(
        (t for t in full_set(obs.rules.set_size) if t not in placed and t not in own),
        key=_codes_key,
    )
    pool = unseen.copy()
    rng.shuffle(pool)
    others = [s for s in range(players) if s != seat]

    def allowed(s: int, t: Tile) -> bool:
        row = hard[s]
        return not (row[t.a] or row[t.b])

    order = sorted(others, key=lambda s: sum(1 for t in pool if allowed(s, t)) - obs.hand_sizes[s])
    hands: dict[int, list[Tile]] = {}
    for s in order:
        need = obs.hand_sizes[s]
        take: list[Tile] = []
        rest: list[Tile] = []
        for t in pool:
            if len(take) < need and allowed(s, t):
                take.append(t)
            else:
                rest.append(t)
        if len(take) < need:
            return None
        hands[s] = take
        pool = rest
    target: list[Tile] = [t for s in others for t in hands[s]] + pool
    if len(target) != len(unseen):
        return None
    # the Fisher-Yates draws (i from the end down to 1) that turn `unseen` into `target`
    items = unseen.copy()
    where = {t: i for i, t in enumerate(items)}
    script = [rng.getrandbits(64)]
    for i in range(len(items) - 1, 0, -1):
        j = where[target[i]]
        script.append(j)
        items[i], items[j] = items[j], items[i]
        where[items[i]] = i
        where[items[j]] = j
    world = determinize(obs, _ScriptedRandom(rng.getrandbits(64), script))
    for s in others:
        if sorted(world.hand(s), key=_codes_key) != sorted(hands[s], key=_codes_key):
            return None
    return world


def play_out(
    state: MatchState,
    policy: Callable[[MatchState, Sequence[Move]], Move] = rollout_move,
) -> None:
    """Play the current round to its end with `policy` (state.halt_at_round_end set)."""
    while not state.round_over:
        moves = legal_moves(state)
        apply_move(state, moves[0] if len(moves) == 1 else policy(state, moves))


class MonteCarloBot(Bot):
    """Determinized Monte Carlo search over the legal moves, one round deep."""

    def __init__(
        self,
        budget_ms: float | None = None,
        max_samples: int = 500,
        max_candidates: int = 8,
        prior_weight: float = 0.5,
        void_weight: float = 0.9,
        sampler: str = "voids",
    ) -> None:
        self.budget_ms = _budget_from_env() if budget_ms is None else float(budget_ms)
        if self.budget_ms < 0:
            raise ValueError(f"budget_ms must be >= 0, got {budget_ms}")
        if max_samples < 1 or max_candidates < 1:
            raise ValueError("max_samples and max_candidates must be >= 1")
        self.max_samples = max_samples
        self.max_candidates = max_candidates
        self.prior_weight = prior_weight
        self.void_weight = void_weight
        if sampler not in ("voids", "plain"):
            raise ValueError(f"sampler must be 'voids' or 'plain', got {sampler!r}")
        self.sampler = sampler
        self.last_samples = 0  # worlds sampled for the last decision (for tests and tuning)

    def choose(self, turn: Turn) -> Move:
        start = time.monotonic()
        moves = turn.legal_moves
        if len(moves) == 1:
            self.last_samples = 0
            return moves[0]
        obs = turn.observation
        policy = SmartPolicy(obs, turn.history)
        ranked = policy.rank(moves)
        candidates = ranked[: self.max_candidates]
        safety = SAFETY_MS / 1000.0 + SAFETY_SHARE * turn.deadline_ms / 1000.0
        stop = min(start + self.budget_ms / 1000.0, start + turn.time_left() - safety)
        seed = match_seed(turn.match_id, obs.seat, f"mc/{obs.event_count}")
        voids = policy.view.voids if self.void_weight > 0 else None
        values, weight, samples = self._search(obs, candidates, random.Random(seed), stop, voids)
        self.last_samples = samples
        if samples == 0 or weight <= 0:
            return ranked[0]
        scores = [v / weight for v in values]
        if self.prior_weight:
            for i, move in enumerate(candidates):
                scores[i] += self.prior_weight * policy.score(move)
        best = 0
        for i in range(1, len(candidates)):
            if scores[i] > scores[best]:
                best = i  # ties keep the SmartPolicy order
        return candidates[best]

    def _world_weight(self, world: MatchState, seat: int, voids: list[list[float]]) -> float:
        """How plausible a sampled world is given the seats' known voids (1 = no conflict)."""
        weight = 1.0
        keep = self.void_weight
        for s, row in enumerate(voids):
            if s == seat:
                continue
            for t in world.hand(s):
                conflict = row[t.a] if row[t.a] >= row[t.b] else row[t.b]
                if conflict:
                    weight *= 1.0 - keep * conflict
        return weight

    def _search(
        self,
        obs: Observation,
        candidates: Sequence[Move],
        rng: random.Random,
        stop: float,
        voids: list[list[float]] | None = None,
    ) -> tuple[list[float], float, int]:
        """Weighted summed outcomes per candidate over complete worlds, total weight, worlds."""
        seat = obs.seat
        players = obs.rules.players
        totals = [0.0] * len(candidates)
        total_weight = 0.0
        samples = 0
        clock = time.monotonic
        hard: list[list[bool]] | None = None
        soft = voids
        if voids is not None and self.sampler == "voids":
            hard = [[c >= 1.0 for c in row] for row in voids]
            soft = [[0.0 if c >= 1.0 else c for c in row] for row in voids]
            if not any(any(row) for s, row in enumerate(hard) if s != seat):
                hard = None
        spent = 0.0  # seconds taken by the complete worlds
        while samples < self.max_samples:
            began = clock()
            if began >= stop or (samples and began + spent / samples > stop):
                break  # another world would not finish in time: do not start it
            try:
                world = None if hard is None else constrained_world(obs, rng, hard)
                if world is None:
                    world = determinize(obs, rng)
                    weight = 1.0 if voids is None else self._world_weight(world, seat, voids)
                else:
                    weight = 1.0 if soft is None else self._world_weight(world, seat, soft)
            except ValueError:
                break  # an observation the sampler cannot complete: play the heuristic move
            world.halt_at_round_end = True
            outcome: list[float] = []
            for move in candidates:
                if clock() >= stop:
                    return totals, total_weight, samples
                state = world.clone()
                if move.kind is MoveKind.PLAY or not state.round_over:
                    apply_move(state, move)
                play_out(state)
                scores = state.round_outcomes[-1].scores
                others = (sum(scores) - scores[seat]) / (players - 1)
                outcome.append(others - scores[seat])
            for i, value in enumerate(outcome):
                totals[i] += weight * value
            total_weight += weight
            samples += 1
            spent += clock() - began
        return totals, total_weight, samples


if __name__ == "__main__":
    raise SystemExit(run_main(MonteCarloBot))
