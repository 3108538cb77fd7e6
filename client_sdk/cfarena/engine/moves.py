"""Moves: what a player does on its turn, with a stable compact identity."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cfarena.engine.tiles import Tile


class MoveKind(enum.Enum):
    """The three things a player can do on its turn."""

    PLAY = "play"  # put `tile` from the hand on the placed tile `parent`
    DRAW = "draw"  # take one tile from the boneyard (only when no play exists)
    PASS = "pass"  # end the turn without playing (stuck, or keeping a drawn tile)


@dataclass(frozen=True, slots=True)
class Move:
    """A move. `parent` is the layout node id (0 = the centre) a PLAY attaches to.

    `key` is the compact, stable identity carried by logs and the protocol:
    `"9-4@3"` (play 9-4 on node 3), `"draw"`, `"pass"`.
    """

    kind: MoveKind
    tile: Tile | None = None
    parent: int | None = None

    @staticmethod
    def play(tile: Tile, parent: int) -> Move:
        return Move(MoveKind.PLAY, tile, parent)

    @property
    def key(self) -> str:
        if self.kind is MoveKind.PLAY:
            return f"{self.tile}@{self.parent}"
        return str(self.kind.value)

    @staticmethod
    def parse(key: str) -> Move:
        """Inverse of `key`; ValueError on anything else."""
        text = key.strip()
        if text == "draw":
            return DRAW
        if text == "pass":
            return PASS
        tile_text, sep, parent_text = text.partition("@")
        if not sep or not parent_text.isdigit():
            raise ValueError(f"not a move: {key!r} (expected A-B@NODE, draw or pass)")
        return Move(MoveKind.PLAY, Tile.parse(tile_text), int(parent_text))

    def __str__(self) -> str:
        return self.key


DRAW = Move(MoveKind.DRAW)
PASS = Move(MoveKind.PASS)
