"""The bot API: subclass `Bot` and implement `choose`.

    import random
    from cfarena.sdk import Bot

    class RandomBot(Bot):
        def choose(self, turn):
            return random.choice(turn.legal_moves)

One Bot instance may play several matches at once (a connection's capacity),
and with capacity > 1 `choose` runs in worker threads. Keep per-match state in
a dict keyed by `match_id` (every hook and every Turn carries it), created in
`on_match_start` and dropped in `on_match_end`.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence

from cfarena.engine.events import Event
from cfarena.engine.moves import Move
from cfarena.sdk.types import MatchInfo, MatchResult, Turn

log = logging.getLogger("cfarena.sdk")


class Bot(abc.ABC):
    """A Chicken Foot bot. Only `choose` is required; the hooks default to doing nothing.

    Call order for one match: `on_match_start`, then for every Turn
    `on_events(match_id, turn.events)` followed by `choose(turn)`, and at the
    end `on_events` with the last events (if any) and `on_match_end`. Calls for
    one match never overlap; calls for different matches may (capacity > 1).

    `version` (optional, at most 64 characters) is sent in the Hello: a
    competition arena (`cfarena serve`) rates each version of a bot
    separately. `python -m cfarena.sdk run --version V` (or
    $CFARENA_BOT_VERSION) overrides it.
    """

    version: str = ""

    @abc.abstractmethod
    def choose(self, turn: Turn) -> Move | int:
        """Pick one of `turn.legal_moves` (the Move itself, or its index).

        If this raises, or returns something that was not offered, the SDK logs
        the error and answers with `turn.legal_moves[0]` so the bot does not
        fault; the move is still counted as the bot's own.
        """

    def on_match_start(self, match: MatchInfo) -> None:  # noqa: B027
        """A new match: seat, rules, seat names, time control."""

    def on_events(self, match_id: str, events: Sequence[Event]) -> None:  # noqa: B027
        """New public events of a match, as this seat sees them (never repeated)."""

    def on_match_end(self, result: MatchResult) -> None:  # noqa: B027
        """The match is over: totals, ranks, faults, and the disclosed seed and deals."""


def resolve_choice(choice: object, legal_moves: Sequence[Move]) -> int | None:
    """The index into `legal_moves` that `choice` (a Move or an int index) names, else None."""
    if isinstance(choice, bool):
        return None
    if isinstance(choice, int):
        return choice if 0 <= choice < len(legal_moves) else None
    if isinstance(choice, Move):
        for i, move in enumerate(legal_moves):
            if move is choice:
                return i
        try:
            return list(legal_moves).index(choice)
        except ValueError:
            return None
    return None


def decide(bot: Bot, turn: Turn) -> int:
    """The index of the move `bot.choose(turn)` picked, as the SDK answers the referee:
    if choose raises or returns a move that was not offered, the error is logged
    and the first offered move (index 0) is played."""
    try:
        choice = bot.choose(turn)
    except Exception:
        log.exception(
            "match %s turn %d: choose raised; playing the first offered move %s",
            turn.match_id,
            turn.turn_id,
            turn.legal_moves[0],
        )
        return 0
    index = resolve_choice(choice, turn.legal_moves)
    if index is None:
        log.error(
            "match %s turn %d: choose returned %r, which was not offered; "
            "playing the first offered move %s",
            turn.match_id,
            turn.turn_id,
            choice,
            turn.legal_moves[0],
        )
        return 0
    return index
