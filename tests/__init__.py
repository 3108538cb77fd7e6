"""The test suite writes bytecode whatever the environment says: with
PYTHONDONTWRITEBYTECODE=1 every process compiles what it imports from the checkout
each time (each pytest-xdist worker's collection ~5 s of CPU more, each `cfarena` and
bot process its modules; a sandboxed bot cannot write any). Run first (pytest
imports this package before tests/conftest.py), so the collection, the workers and
every subprocess the suite starts write and reuse bytecode."""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
