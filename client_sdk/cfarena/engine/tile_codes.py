"""Small-integer codes for tiles and cached Move objects (the engine's hot path).

Inside the engine a tile `a-b` is the int `a * 19 + b` (`a <= b <= 18`), so
codes sort in tile order, and a PLAY move is the key `code << 8 | parent`
(parents are node ids < 256: a double-18 set has 190 tiles). The tables below
turn codes back into the public value types; Move objects are created once per
(tile, parent) and shared, so `move in legal_moves(...)` is usually an
identity check.
"""

from __future__ import annotations

from cfarena.engine.moves import Move, MoveKind
from cfarena.engine.tiles import MAX_SET, Tile

STRIDE = MAX_SET + 1
CODE_COUNT = STRIDE * STRIDE

# code -> a, b, pips, Tile. Codes with a > b never occur in the engine; their
# entries are -1 and TILE_OF holds 0-0 there (never read).
END_A: list[int] = [-1] * CODE_COUNT
END_B: list[int] = [-1] * CODE_COUNT
PIPS: list[int] = [-1] * CODE_COUNT
TILE_OF: list[Tile] = [Tile(0, 0)] * CODE_COUNT
VALID: list[bool] = [False] * CODE_COUNT
for _a in range(STRIDE):
    for _b in range(_a, STRIDE):
        _c = _a * STRIDE + _b
        END_A[_c] = _a
        END_B[_c] = _b
        PIPS[_c] = _a + _b
        TILE_OF[_c] = Tile(_a, _b)
        VALID[_c] = True


def code_of(tile: Tile) -> int:
    """The code of a tile."""
    return tile.a * STRIDE + tile.b


def tile_of(code: int) -> Tile:
    """The tile of a code."""
    if not VALID[code]:
        raise ValueError(f"not a tile code: {code}")
    return TILE_OF[code]


def set_codes(n: int) -> list[int]:
    """Codes of a double-`n` set in canonical tile order."""
    return [a * STRIDE + b for a in range(n + 1) for b in range(a, n + 1)]


def play_key(code: int, parent: int) -> int:
    return code << 8 | parent


_PLAY_MOVES: dict[int, Move] = {}


def play_move(key: int) -> Move:
    """The shared Move object for the play key `code << 8 | parent`."""
    move = _PLAY_MOVES.get(key)
    if move is None:
        move = Move(MoveKind.PLAY, TILE_OF[key >> 8], key & 0xFF)
        _PLAY_MOVES[key] = move
    return move
