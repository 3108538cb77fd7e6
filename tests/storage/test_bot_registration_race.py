"""Registering one name from several connections at once (two `cfarena bots add`, a
web admin and a tournament): each gets the one bot, none an error."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from cfarena.server.storage import Registration, hash_token, open_database

from .helpers import count

RACERS = 4
NAMES = 12


def test_racing_registrations_of_one_name_all_get_the_one_bot(db_url: str) -> None:
    stores = [open_database(db_url) for _ in range(RACERS)]  # a connection pool each
    start = threading.Barrier(RACERS)

    def race(store_index: int) -> list[Registration]:
        store = stores[store_index]
        got = []
        try:
            for n in range(NAMES):
                start.wait(30)  # every racer sends this name's registration at once
                got.append(store.register_bot(f"bot{n}", hash_token(f"token-{n}")))
        except BaseException:
            start.abort()  # the others stop waiting for this one
            raise
        return got

    try:
        with ThreadPoolExecutor(RACERS) as pool:
            racers = [pool.submit(race, i) for i in range(RACERS)]
        errors = [repr(r.exception()) for r in racers if r.exception() is not None]
        assert not errors, errors
        results = [r.result() for r in racers]
        for n in range(NAMES):
            registrations = [got[n] for got in results]
            assert len({r.bot_id for r in registrations}) == 1, registrations
            assert sum(r.added for r in registrations) == 1, registrations
        assert count(stores[0], "bots") == NAMES
    finally:
        for store in stores:
            store.close()
