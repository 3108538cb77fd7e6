"""A `db` opened on every backend of the `db_url` fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cfarena.server.storage import Database, open_database


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = open_database(db_url)
    try:
        yield database
    finally:
        database.close()
