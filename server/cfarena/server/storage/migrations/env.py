"""Alembic environment of the cfarena schema.

Run through `cfarena.server.storage.open_database` (or `engine.upgrade`), which
hands over an open connection in `config.attributes["connection"]`; with only a
`sqlalchemy.url` main option an engine is built the same way `open_database`
builds one (SQLite pragmas included).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from cfarena.server.storage.connect import make_engine
from cfarena.server.storage.models import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations() -> None:
    if context.is_offline_mode():
        context.configure(
            url=context.config.get_main_option("sqlalchemy.url"),
            target_metadata=Base.metadata,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("cfarena migrations need a connection or a sqlalchemy.url option")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


run_migrations()
