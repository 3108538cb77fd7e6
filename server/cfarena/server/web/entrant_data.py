"""What a signed-in entrant's pages show of their own bot, read from the database
(synchronous: run it in the web's worker threads).

Everything is of one bot (`bot_id`, the session's) and of the seats it held: a match
without one of its seats is "no match" (the same answer as a match that does not
exist), another seat's output is never read, and a seat's turns and record come from
`seat_view` (what that seat saw). The seed is added only once the match's deal is
over everywhere (`disclosure.deal_revealed`), as on the public pages; the seat's own
view (its hands, its turns, its output) is shown once the match is stored, which is
when its output and log are. How its process ended is shown without the arena's hint
for a missing path (it names the organiser's paths: `failure_lines.without_hint`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cfarena.match.bot_ids import bot_match_id
from cfarena.server.sandbox.failure_lines import without_hint
from cfarena.server.storage import Database, MatchInfo, StorageError
from cfarena.server.web.data import NotFound, match_summary
from cfarena.server.web.disclosure import deal_revealed
from cfarena.server.web.seat_view import seat_record, seat_view

MATCHES_SHOWN = 200  # on the entrant's page, newest first (the download pages through all)
GAMES_PAGE = 100  # games in one download at most (`?limit=`, its default too)


@dataclass(frozen=True, slots=True)
class GamesPage:
    """One file of an entrant's download: its lines (made lazily) and where the next
    page starts."""

    lines: Iterator[str]
    last: str | None  # the id of this page's last match, if another page follows


def own_seats(m: MatchInfo, bot_id: int) -> list[int]:
    """The seats bot `bot_id` held in match `m`."""
    return sorted(s.seat for s in m.seats if s.bot_id == bot_id)


def _row(m: MatchInfo, bot_id: int) -> dict[str, Any]:
    return {**match_summary(m), "bot_match_id": bot_match_id(m.id, m.tournament_id, m.seed,
                                                             m.key),
            "own_seats": own_seats(m, bot_id)}


def matches(db: Database, bot_id: int) -> list[dict[str, Any]]:
    """The bot's latest `MATCHES_SHOWN` matches, newest first, each with the id its bots
    were given and the bot's seats (no seeds)."""
    return [_row(m, bot_id) for m in db.list_matches(bot=bot_id, limit=MATCHES_SHOWN)]


def match(db: Database, bot_id: int, given: str) -> dict[str, Any]:
    """One match of the bot, by its stored id or the id its bots were given: the
    summary, each own seat's output (as `cfarena show --logs`) and turns; the seed once
    revealed. NotFound if there is no such match or the bot held no seat in it."""
    # only the bot's own matches are looked at: a lookup costs what its matches do
    found = db.match_ids_given(given, bot_id)
    detail = db.get_match(found[0]) if found else None
    seats = [] if detail is None else own_seats(detail.match, bot_id)
    if detail is None or not seats:
        raise NotFound(f"none of your matches has the id {given!r}")
    m = detail.match
    # the arena's hint for a missing path names the organiser's paths: not shown here
    outputs = {x.seat: dataclasses.replace(x, exit=x.exit and without_hint(x.exit))
               for x in db.seat_logs(m.id) if x.seat in seats}
    revealed = deal_revealed(db.same_deal(m.id))
    problem = None
    try:
        log = db.get_log(m.id)
    except StorageError as exc:  # its digest mismatches
        log, problem = None, str(exc)
    views = {seat: seat_view(log, seat) for seat in seats} if log is not None else {}
    return {
        **_row(m, bot_id), "revealed": revealed, "seed": str(m.seed) if revealed else None,
        "faults": [{"seat": f.seat, "kind": f.kind.value, "detail": f.detail,
                    "turn": f.turn_id} for f in detail.faults if f.seat in seats],
        "seats_shown": [{"seat": seat, "output": outputs.get(seat), "view": views.get(seat)}
                        for seat in seats],
        "log_problem": problem, "logged": log is not None,
    }


def games(db: Database, bot_id: int, after: str | None = None, limit: int = GAMES_PAGE
          ) -> GamesPage:
    """A page of the bot's games as JSON Lines: `seat_view.seat_record` of each stored
    game log of its matches, in the order they ended, those after its match `after`
    (None: from the first), at most `limit` (each line its own seats' views; the seed only once
    revealed). The page's logs are read and re-simulated lazily, a match at a time.
    NotFound if `after` is not one of the bot's matches."""
    listed = db.logged_matches_after(bot_id, after, limit + 1)
    if listed is None:
        raise NotFound(f"none of your matches has the id {after!r}")
    page = listed[:limit]
    return GamesPage(_game_lines(db, bot_id, page),
                     page[-1].id if len(listed) > limit else None)


def _game_lines(db: Database, bot_id: int, page: Sequence[MatchInfo]) -> Iterator[str]:
    for m in page:
        try:
            log = db.get_log(m.id)
        except StorageError as exc:
            yield json.dumps({"match_id": m.id, "error": str(exc)}) + "\n"
            continue
        if log is None:
            continue
        revealed = deal_revealed(db.same_deal(m.id))
        record = seat_record(log, own_seats(m, bot_id),
                             bot_match_id(m.id, m.tournament_id, m.seed, m.key), revealed)
        yield json.dumps(record, ensure_ascii=False) + "\n"
