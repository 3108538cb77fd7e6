"""Rule options, the three presets as data, and their validation (RULES.md §7).

A `Rules` value holds options as chosen (some may depend on the number of
players, e.g. the set size); `Rules.resolve(players)` turns it into
`ResolvedRules`, concrete numbers the engine plays by, or raises `RulesError`
naming the offending option.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from cfarena.engine.tiles import MAX_SET, MIN_SET, set_count

MIN_PLAYERS = 2
MAX_PLAYERS = 8
MAX_TRAINS = 8  # the trains source: "maximaal acht" (RULES.md §7)
DOUBLE_BLANK_VALUES = (0, 25, 50)  # what 0-0 may count (RULES.md §7)


class Start(enum.Enum):
    """Who plays first and where the round double comes from (RULES.md §4)."""

    CENTRE_FIRST = "centre_first"
    HOLDER = "holder"
    DRAW_OFF = "draw_off"


class Draw(enum.Enum):
    """How many tiles a stuck player draws in one turn."""

    ONE = "one"
    UNTIL_PLAYABLE = "until_playable"


class PlayDrawn(enum.Enum):
    """Whether a drawn tile that fits must be played or may be kept."""

    MUST = "must"
    MAY = "may"


class TieBreak(enum.Enum):
    """How equal match totals are ranked (RULES.md §5)."""

    SHARED = "shared"
    ZERO_ROUNDS = "zero_rounds"


class RulesError(ValueError):
    """A rules combination that cannot be played; names the option and why."""

    def __init__(self, option: str, reason: str) -> None:
        super().__init__(f"rule option {option!r}: {reason}")
        self.option = option
        self.reason = reason


def _frozen(mapping: Mapping[Any, int]) -> Mapping[Any, int]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Rules:
    """Rule options as chosen. `None` means "from the preset's table"."""

    name: str = "custom"
    # set size N by player count, or a fixed N
    set_size: int | None = None
    set_by_players: Mapping[int, int] = field(default_factory=lambda: _frozen({}))
    # hand size, or the table (set size, players) -> hand size
    hand_size: int | None = None
    hand_table: Mapping[tuple[int, int], int] = field(default_factory=lambda: _frozen({}))
    start: Start = Start.CENTRE_FIRST
    # an int, or "players" (one spoke per player)
    spokes: int | str = 6
    toes: int = 3
    draw: Draw = Draw.ONE
    play_drawn: PlayDrawn = PlayDrawn.MUST
    # a fixed reserve, or None with reserve_by_players
    boneyard_reserve: int | None = 0
    reserve_by_players: Mapping[int, int] = field(default_factory=lambda: _frozen({}))
    double_blank: int = 50
    # "full" | "half" | "single" | k
    rounds: str | int = "full"
    end_at_score: int | None = None
    tie_break: TieBreak = TieBreak.SHARED

    # ------------------------------------------------------------------ presets
    @staticmethod
    def preset(name: str) -> Rules:
        """One of `standard`, `maltese`, `trains` (RULES.md §7)."""
        try:
            return PRESETS[name]
        except KeyError:
            known = ", ".join(sorted(PRESETS))
            raise RulesError("preset", f"unknown preset {name!r} (known: {known})") from None

    def with_options(self, **options: Any) -> Rules:
        """This ruleset with some options replaced; values may be strings (CLI)."""
        changes: dict[str, Any] = {}
        for key, value in options.items():
            changes[canonical_key(key)] = parse_option(key, value)
        return replace(self, **changes)

    @staticmethod
    def from_options(options: Mapping[str, Any]) -> Rules:
        """`{"preset": "standard", "spokes": 4, ...}` -> Rules (preset defaults to standard)."""
        opts = dict(options)
        base = Rules.preset(str(opts.pop("preset", "standard")))
        return base.with_options(**opts)

    def to_options(self) -> dict[str, Any]:
        """`{"preset": name, **overrides}` as plain JSON values; `from_options` inverts it."""
        base = PRESETS.get(self.name, STANDARD)
        out: dict[str, Any] = {"preset": base.name}
        for key in OPTION_KEYS:
            value = getattr(self, key)
            if value != getattr(base, key):
                out[key] = value.value if isinstance(value, enum.Enum) else value
        return out

    # --------------------------------------------------------------- resolution
    def resolve(self, players: int) -> ResolvedRules:
        """Concrete rules for `players` players, or `RulesError` naming the option."""
        if not isinstance(players, int) or not (MIN_PLAYERS <= players <= MAX_PLAYERS):
            raise RulesError(
                "players", f"must be between {MIN_PLAYERS} and {MAX_PLAYERS}, got {players}"
            )
        n = self.set_size if self.set_size is not None else self.set_by_players.get(players)
        if n is None:
            raise RulesError("set_size", f"preset {self.name!r} has no set for {players} players")
        if not (MIN_SET <= n <= MAX_SET):
            raise RulesError("set_size", f"must be between {MIN_SET} and {MAX_SET}, got {n}")
        hand = self.hand_size if self.hand_size is not None else self.hand_table.get((n, players))
        if hand is None:
            raise RulesError(
                "hand_size",
                f"preset {self.name!r} has no hand size for a double-{n} set with "
                f"{players} players; set hand_size explicitly",
            )
        if hand < 1:
            raise RulesError("hand_size", f"must be at least 1, got {hand}")
        tiles = set_count(n)
        # every start mode takes the round double out of what is dealt, except
        # `holder`, where it is dealt like any tile
        dealable = tiles if self.start is Start.HOLDER else tiles - 1
        if hand * players > dealable:
            raise RulesError(
                "hand_size",
                f"{players} hands of {hand} need {hand * players} tiles but a double-{n} "
                f"set deals only {dealable}",
            )
        spokes = players if self.spokes == "players" else self.spokes
        if not isinstance(spokes, int):
            raise RulesError("spokes", f"must be a whole number or 'players', got {spokes!r}")
        reserve = (
            self.boneyard_reserve
            if self.boneyard_reserve is not None
            else self.reserve_by_players.get(players)
        )
        if reserve is None:
            raise RulesError("boneyard_reserve", "must be a whole number >= 0, got None")
        if self.rounds == "full":
            rounds = n + 1
        elif self.rounds == "half":
            rounds = math.ceil((n + 1) / 2)
        elif self.rounds == "single":
            rounds = 1
        elif isinstance(self.rounds, int) and 1 <= self.rounds <= n + 1:
            rounds = self.rounds
        else:
            raise RulesError(
                "rounds", f"must be full, half, single or 1..{n + 1}, got {self.rounds!r}"
            )
        if self.end_at_score is not None and self.end_at_score < 0:
            raise RulesError("end_at_score", f"must be >= 0, got {self.end_at_score}")
        resolved = ResolvedRules(
            name=self.name,
            players=players,
            set_size=n,
            hand_size=hand,
            start=self.start,
            spokes=spokes,
            toes=self.toes,
            draw=self.draw,
            play_drawn=self.play_drawn,
            boneyard_reserve=reserve,
            double_blank=self.double_blank,
            rounds=rounds,
            end_at_score=self.end_at_score,
            tie_break=self.tie_break,
        )
        check_resolved(resolved)
        return resolved


@dataclass(frozen=True, slots=True)
class ResolvedRules:
    """The concrete numbers a match is played by (what the engine reads)."""

    name: str
    players: int
    set_size: int
    hand_size: int
    start: Start
    spokes: int
    toes: int
    draw: Draw
    play_drawn: PlayDrawn
    boneyard_reserve: int
    double_blank: int
    # number of rounds; with end_at_score, rounds go on past it (cycling doubles)
    rounds: int
    end_at_score: int | None
    tie_break: TieBreak

    def round_double_value(self, round_index: int) -> int:
        """The round double of round `round_index` (0-based): N-N, N-1, ..., 0-0, N-N, ..."""
        return self.set_size - (round_index % (self.set_size + 1))

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: (getattr(self, f.name).value
                     if isinstance(getattr(self, f.name), enum.Enum) else getattr(self, f.name))
            for f in fields(self)
        }


# The options a user may set on top of a preset (a rules file or --rule KEY=VALUE).
OPTION_KEYS: tuple[str, ...] = (
    "set_size",
    "hand_size",
    "start",
    "spokes",
    "toes",
    "draw",
    "play_drawn",
    "boneyard_reserve",
    "double_blank",
    "rounds",
    "end_at_score",
    "tie_break",
)
# accepted aliases for option keys
_ALIASES = {"set": "set_size", "reserve": "boneyard_reserve"}
_ENUMS: dict[str, type[enum.Enum]] = {
    "start": Start,
    "draw": Draw,
    "play_drawn": PlayDrawn,
    "tie_break": TieBreak,
}


def canonical_key(key: str) -> str:
    """`set` -> `set_size`, `play-drawn` -> `play_drawn`; RulesError for unknown keys."""
    k = key.strip().replace("-", "_")
    k = _ALIASES.get(k, k)
    if k not in OPTION_KEYS:
        raise RulesError(key, f"unknown rule option (known: {', '.join(OPTION_KEYS)})")
    return k


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise RulesError(key, f"must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise RulesError(key, f"must be a whole number, got {value!r}") from None


def parse_option(key: str, value: Any) -> Any:
    """Validate and convert one option value (strings from a CLI are accepted)."""
    k = canonical_key(key)
    if k in _ENUMS:
        enum_type = _ENUMS[k]
        if isinstance(value, enum_type):
            return value
        try:
            return enum_type(str(value).strip())
        except ValueError:
            allowed = ", ".join(str(m.value) for m in enum_type)
            raise RulesError(k, f"must be one of {allowed}, got {value!r}") from None
    if k == "spokes":
        if isinstance(value, str) and value.strip() == "players":
            return "players"
        return _as_int(k, value)
    if k == "rounds":
        if isinstance(value, str) and value.strip() in ("full", "half", "single"):
            return value.strip()
        return _as_int(k, value)
    if k in ("end_at_score", "set_size", "hand_size", "boneyard_reserve"):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            if k == "boneyard_reserve":
                raise RulesError(k, "must be a whole number >= 0")
            return None
        return _as_int(k, value)
    return _as_int(k, value)


def _range_table(spec: Mapping[range, int]) -> Mapping[int, int]:
    return _frozen({p: v for r, v in spec.items() for p in r})


STANDARD = Rules(
    name="standard",
    set_by_players=_range_table({range(2, 7): 9, range(7, 9): 12}),
    hand_table=_frozen(
        {(9, 2): 20, (9, 3): 14, (9, 4): 11, (9, 5): 9, (9, 6): 7, (12, 7): 10, (12, 8): 9}
    ),
    start=Start.CENTRE_FIRST,
    spokes=6,
    toes=3,
    draw=Draw.ONE,
    play_drawn=PlayDrawn.MUST,
    boneyard_reserve=0,
    double_blank=50,
    rounds="full",
    tie_break=TieBreak.SHARED,
)

MALTESE = Rules(
    name="maltese",
    set_by_players=_range_table({range(2, 8): 9, range(8, 9): 12}),
    hand_size=7,
    start=Start.HOLDER,
    spokes=4,
    toes=3,
    draw=Draw.ONE,
    play_drawn=PlayDrawn.MAY,
    boneyard_reserve=0,
    double_blank=50,
    rounds="full",
    tie_break=TieBreak.ZERO_ROUNDS,
)

TRAINS = Rules(
    name="trains",
    set_by_players=_range_table({range(2, 9): 9}),
    hand_table=_frozen(
        {(9, p): h for p, h in zip(range(2, 9), (21, 14, 11, 8, 7, 6, 5), strict=True)}
    ),
    start=Start.DRAW_OFF,
    spokes="players",
    toes=3,
    draw=Draw.ONE,
    play_drawn=PlayDrawn.MUST,
    boneyard_reserve=None,
    reserve_by_players=_frozen({p: (2 if p == 2 else 1) for p in range(2, 9)}),
    double_blank=0,
    rounds="full",
    tie_break=TieBreak.SHARED,
)

PRESETS: Mapping[str, Rules] = MappingProxyType(
    {"standard": STANDARD, "maltese": MALTESE, "trains": TRAINS}
)


def resolve_rules(rules: Rules | ResolvedRules, players: int) -> ResolvedRules:
    """`rules` resolved for `players` (RulesError naming the option if impossible)."""
    if isinstance(rules, ResolvedRules):
        if rules.players != players:
            raise RulesError(
                "players", f"the resolved rules are for {rules.players} players, got {players}"
            )
        check_resolved(rules)
        return rules
    return rules.resolve(players)


def check_resolved(rules: ResolvedRules) -> None:
    """Refuse a hand-built ResolvedRules that cannot be played (RulesError naming the option)."""
    n = rules.set_size
    if not (MIN_SET <= n <= MAX_SET):
        raise RulesError("set_size", f"must be between {MIN_SET} and {MAX_SET}, got {n}")
    if not (MIN_PLAYERS <= rules.players <= MAX_PLAYERS):
        raise RulesError(
            "players", f"must be between {MIN_PLAYERS} and {MAX_PLAYERS}, got {rules.players}"
        )
    dealable = set_count(n) - (0 if rules.start is Start.HOLDER else 1)
    if rules.hand_size < 1 or rules.hand_size * rules.players > dealable:
        raise RulesError(
            "hand_size",
            f"{rules.players} hands of {rules.hand_size} do not fit a double-{n} set "
            f"({dealable} tiles to deal)",
        )
    if not (1 <= rules.spokes <= n):
        raise RulesError("spokes", f"must be between 1 and {n} (or 'players'), got {rules.spokes}")
    if rules.name == "trains" and rules.spokes > MAX_TRAINS:
        raise RulesError("spokes", f"trains allows at most {MAX_TRAINS} trains, got {rules.spokes}")
    # a double off the centre meets at most N-1 other tiles carrying its number
    if not (1 <= rules.toes <= n - 1):
        raise RulesError("toes", f"must be between 1 and {n - 1}, got {rules.toes}")
    boneyard = dealable - rules.hand_size * rules.players
    if not (0 <= rules.boneyard_reserve <= boneyard):
        raise RulesError(
            "boneyard_reserve",
            f"must be between 0 and {boneyard} (the tiles left after the deal), "
            f"got {rules.boneyard_reserve}",
        )
    if rules.double_blank not in DOUBLE_BLANK_VALUES:
        allowed = ", ".join(map(str, DOUBLE_BLANK_VALUES))
        raise RulesError("double_blank", f"must be one of {allowed}, got {rules.double_blank}")
    if rules.rounds < 1:
        raise RulesError("rounds", f"must be >= 1, got {rules.rounds}")
    if rules.end_at_score is not None and rules.end_at_score < 0:
        raise RulesError("end_at_score", f"must be >= 0, got {rules.end_at_score}")
