"""`python -m cfarena.sdk run TARGET [--server HOST:PORT] [--token T] ...` and
`python -m cfarena.sdk play TARGET [--vs BOT ...]` (see cli.py)."""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # the SDK's imports (gRPC, protobuf, the client) make some 25,000 objects that live
    # as long as the bot, hardly any garbage, yet the collector would run some 35 times
    # over them while they load: off until `main`, before any of the bot's code runs,
    # freezes them and turns it back on (`collector_off`)
    gc.disable()

from cfarena.sdk.cli import main

if __name__ == "__main__":
    raise SystemExit(main(collector_off=True))
