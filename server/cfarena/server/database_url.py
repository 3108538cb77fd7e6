"""The database cfarena uses when none is given (`--db`, `CFARENA_DB`).

A module of its own, outside `storage`: the CLI shows it in its help without
loading SQLAlchemy.
"""

DEFAULT_URL = "sqlite:///cfarena.db"
