"""The storage facade: `open_database(url)` and the `Database` its callers use.

`Database` is made of stores, each the calls about one thing, every call one short
transaction (`sessions.Sessions`): bots and their tokens (`bot_store`), tournaments
(`tournament_store`), a match's life from schedule to record (`match_store`), what
was played (`result_store`), the competition arena's ratings and what its pages
show (`arena_store`), several arenas on one database (`arena_fleet`), bot tests
(`sprt_store`).
"""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from cfarena.server.database_url import DEFAULT_URL
from cfarena.server.storage.arena_fleet import FleetStore
from cfarena.server.storage.arena_store import ArenaStore
from cfarena.server.storage.bot_store import BotStore
from cfarena.server.storage.connect import (
    StorageError,
    check_current,
    is_read_only,
    make_engine,
    one_line,
    upgrade,
)
from cfarena.server.storage.match_store import MatchStore
from cfarena.server.storage.result_store import ResultStore
from cfarena.server.storage.sprt_store import SprtStore
from cfarena.server.storage.tournament_store import TournamentStore


def open_database(url: str = DEFAULT_URL, *, create: bool = True) -> Database:
    """Open (creating or upgrading the schema to the latest migration) the database at `url`.

    With `create=False` (commands that only read) the database must exist
    already: a SQLite file that does not is refused ("no database at PATH")
    without being created, and so is a database without cfarena's tables; a
    PostgreSQL server refuses a database that does not exist by itself.

    Raises `StorageError` with a one-line message when the URL is invalid or the
    database cannot be reached or migrated.
    """
    engine = make_engine(url, create=create)
    try:
        if is_read_only(engine):  # a read of a database it cannot write: no migration
            check_current(engine)
        else:
            upgrade(engine, create=create)
    except StorageError:
        engine.dispose()
        raise
    except (SQLAlchemyError, OSError) as exc:
        engine.dispose()
        shown = engine.url.render_as_string(hide_password=True)
        raise StorageError(f"cannot open database {shown}: {one_line(exc)}") from exc
    return Database(engine)


class Database(BotStore, TournamentStore, MatchStore, ResultStore, ArenaStore, FleetStore,
               SprtStore):
    """Synchronous facade over one database (see the module docstring for its stores)."""

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
