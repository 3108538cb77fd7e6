"""A referee's connections seen as seats (`RefereeServer.seats`): what the arena's
ladder and the referee's own seating ask of them.

Only the connections a bot dialled in with its token count (`cfarena serve`'s bots,
and `run_match` without chosen connections); a process a tournament started itself,
with a one-time pass, plays the one match it was started for and is never offered a
seat. A connection that is closed, or not answering, has no free slot
(`BotConnection.free`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from cfarena.server.referee.connection import BotConnection

# a seat to fill: the bot's name and, if it matters, the version it connected as
SeatWish = tuple[str, str | None]


class Seats:
    """The dial-in connections of a referee as seats: free slots, capacity, matches in
    play, and reserving a connection per seat of a match (`take`, `release`)."""

    def __init__(self, connections: Callable[[], Iterable[BotConnection]]) -> None:
        self._connections = connections

    def _dialled_in(self) -> Iterator[BotConnection]:
        return (c for c in self._connections() if c.seat_pass is None)

    def free(self) -> dict[tuple[str, str], int]:
        """(bot name, version) -> free slots over its open connections."""
        out: dict[tuple[str, str], int] = {}
        for conn in self._dialled_in():
            if not conn.closed:
                key = (conn.bot_name, conn.version)
                out[key] = out.get(key, 0) + conn.free
        return out

    def free_by_bot(self) -> dict[str, int]:
        """Bot name -> free slots over its open connections (any version)."""
        out: dict[str, int] = {}
        for (bot, _version), free in self.free().items():
            out[bot] = out.get(bot, 0) + free
        return out

    def capacity(self) -> dict[str, int]:
        """Bot name -> the capacity of its open connections, summed (what it said it
        can play at once, here)."""
        out: dict[str, int] = {}
        for conn in self._dialled_in():
            if not conn.closed:
                out[conn.bot_name] = out.get(conn.bot_name, 0) + conn.capacity
        return out

    def playing(self) -> dict[str, int]:
        """Bot name -> the matches it is seated in here (a closed connection's too, until
        their runners end them)."""
        out: dict[str, int] = {}
        for conn in self._dialled_in():
            out[conn.bot_name] = out.get(conn.bot_name, 0) + len(conn.matches)
        return out

    def take(self, match_id: str, wishes: Sequence[SeatWish]) -> list[BotConnection] | None:
        """Reserve one connection per seat of `match_id`: for each (bot, version or None)
        the freest of that bot's (distinct connections for one bot); None, with nothing
        reserved, if some seat has no free connection."""
        chosen: list[BotConnection] = []
        for bot, version in wishes:
            candidates = [
                c for c in self._dialled_in()
                if c.bot_name == bot and (version is None or c.version == version)
                and c.free > 0 and c not in chosen
            ]
            if not candidates:
                return None
            chosen.append(max(candidates, key=lambda c: c.free))
        for seat, conn in enumerate(chosen):
            conn.matches[match_id] = seat
        return chosen

    @staticmethod
    def release(match_id: str, conns: Iterable[BotConnection]) -> None:
        """Give back seats reserved for a match that is not going to be played."""
        for conn in conns:
            conn.matches.pop(match_id, None)
