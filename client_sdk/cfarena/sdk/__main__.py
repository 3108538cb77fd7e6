"""`python -m cfarena.sdk run TARGET [--server HOST:PORT] [--token T] ...` and
`python -m cfarena.sdk play TARGET [--vs BOT ...]` (see cli.py)."""

from __future__ import annotations

from cfarena.sdk.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
