"""A free TCP port, for what must know its port before it starts.

Prefer port 0 and reading the bound port back (`tests.harness.serve` reads
`cfarena serve`'s from its log). A port chosen here may be taken by another
process before it is used; only what cannot report its port uses it (a PostgreSQL
cluster, which restarts on the same port in the outage tests)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (nothing listens on it: also
    what a test of a refused connection dials)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that something listens on while the block runs."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])
