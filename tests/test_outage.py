"""`Outage`: one line when a service goes, one when a call shows it back. A call begun
before the outage began may have got through a shutdown that was cutting its sessions
one by one (ci44: a worker said "job queue available again after 0 s" in the middle of
a PostgreSQL fast shutdown, then "unavailable" again), so only a call begun after it
ends an outage."""

from __future__ import annotations

import time

from cfarena.server.backoff import Outage


def test_an_outage_is_said_once_when_it_begins() -> None:
    outage = Outage()
    assert not outage.away
    assert outage.begin() is True
    assert outage.begin() is False  # a second failed call: still the same outage
    assert outage.away


def test_a_call_begun_before_the_outage_does_not_end_it() -> None:
    outage = Outage()
    before = time.monotonic()
    outage.begin()
    assert outage.end(before) is None
    assert outage.away  # still away: the next call must show it back
    after = time.monotonic()
    away = outage.end(after)
    assert away is not None and 0.0 <= away < 5.0
    assert not outage.away
    assert outage.end(time.monotonic()) is None  # ended once
