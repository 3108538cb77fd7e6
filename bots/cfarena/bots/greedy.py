"""GreedyBot: gets rid of the heaviest tile it can.

Among the PLAY moves it picks the tile with the most pips; ties go to the
tile with the higher high end, then to the lowest layout node, so the choice
is deterministic. When it has just drawn a tile it may keep
(`play_drawn = "may"`), it plays it if it fits. It passes only when there is
no play at all.

    python -m cfarena.sdk run cfarena.bots.greedy --token T
    python -m cfarena.bots.greedy --token T
"""

from __future__ import annotations

from cfarena.sdk import Bot, Move, Turn
from cfarena.sdk.cli import run_main


def _weight(move: Move) -> tuple[int, int, int]:
    assert move.tile is not None and move.parent is not None
    return (move.tile.pips, move.tile.b, -move.parent)


class GreedyBot(Bot):
    """Plays the heaviest legal tile (deterministic tie-breaks)."""

    def choose(self, turn: Turn) -> Move:
        plays = turn.plays
        if not plays:
            return turn.legal_moves[0]
        drawn = turn.observation.drawn_tile
        if drawn is not None:
            with_drawn = [m for m in plays if m.tile == drawn]
            if with_drawn:
                return max(with_drawn, key=_weight)
        return max(plays, key=_weight)


if __name__ == "__main__":
    raise SystemExit(run_main(GreedyBot))
