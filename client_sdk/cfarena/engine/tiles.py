"""Domino tiles and double-N sets."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

MIN_SET = 3
MAX_SET = 18


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """A domino `a-b` with `a <= b`; its pips are `a + b`."""

    a: int
    b: int

    def __post_init__(self) -> None:
        if not (0 <= self.a <= self.b):
            raise ValueError(f"a tile needs 0 <= a <= b, got {self.a}-{self.b}")

    @staticmethod
    def of(x: int, y: int) -> Tile:
        """The tile with ends `x` and `y`, in either order."""
        return Tile(x, y) if x <= y else Tile(y, x)

    @staticmethod
    def parse(text: str) -> Tile:
        """Parse `"4-9"` (or `"9-4"`) into a tile."""
        left, sep, right = text.strip().partition("-")
        if not sep or not left.isdigit() or not right.isdigit():
            raise ValueError(f"not a tile: {text!r} (expected A-B, e.g. 9-4)")
        return Tile.of(int(left), int(right))

    @property
    def pips(self) -> int:
        return self.a + self.b

    @property
    def is_double(self) -> bool:
        return self.a == self.b

    def has(self, value: int) -> bool:
        """Whether one of the tile's ends shows `value`."""
        return self.a == value or self.b == value

    def other(self, value: int) -> int:
        """The end opposite the one showing `value` (for a double, `value`)."""
        if self.a == value:
            return self.b
        if self.b == value:
            return self.a
        raise ValueError(f"tile {self} has no end {value}")

    def __str__(self) -> str:
        return f"{self.a}-{self.b}"


@cache
def full_set(n: int) -> tuple[Tile, ...]:
    """Every tile of a double-`n` set, in canonical order (0-0, 0-1, ..., n-n)."""
    if not (MIN_SET <= n <= MAX_SET):
        raise ValueError(f"set size must be between {MIN_SET} and {MAX_SET}, got {n}")
    return tuple(Tile(a, b) for a in range(n + 1) for b in range(a, n + 1))


def set_count(n: int) -> int:
    """How many tiles a double-`n` set holds: (n + 1)(n + 2) / 2."""
    return (n + 1) * (n + 2) // 2
