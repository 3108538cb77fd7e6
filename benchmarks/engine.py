"""Engine speed: random self-play rounds per second, one core.

Each preset is played with 4 players and `rounds="single"` (one match = one
round), so the figure counts whole rounds including their deal and setup.
`apply_move` validates every move against the legal moves (full legality
checks on). The second figure also builds one `observe()` for the seat to
move at every decision (a turn offering a PLAY), as a referee serving bots
does.

    python benchmarks/engine.py [--seconds 2] [--players 4]
"""

from __future__ import annotations

import argparse
import random
import time

from cfarena.engine import (
    PRESETS,
    apply_move,
    legal_moves,
    needs_decision,
    new_match,
    observe,
)


def rounds_per_second(preset: str, players: int, seconds: float, with_observe: bool) -> float:
    rules = PRESETS[preset].with_options(rounds="single")
    rng = random.Random(12345)
    rounds = 0
    seed = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state = new_match(rules, players, seed)
        seed += 1
        while not state.is_over:
            moves = legal_moves(state)
            if with_observe and needs_decision(moves):
                assert state.current_seat is not None
                observe(state, state.current_seat)
            apply_move(state, moves[rng.randrange(len(moves))])
        rounds += 1
        now = time.perf_counter()
        if now >= deadline:
            return rounds / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--players", type=int, default=4)
    args = parser.parse_args()
    print(f"random self-play, {args.players} players, rounds='single', one core")
    print(f"{'preset':<10} {'rounds/s':>10} {'with observe()':>15}")
    for preset in PRESETS:
        plain = rounds_per_second(preset, args.players, args.seconds, with_observe=False)
        observed = rounds_per_second(preset, args.players, args.seconds, with_observe=True)
        print(f"{preset:<10} {plain:>10,.0f} {observed:>15,.0f}")


if __name__ == "__main__":
    main()
