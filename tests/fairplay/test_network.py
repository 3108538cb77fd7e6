"""Attack 6: a bot tries to reach the network.

`bots/network.py` lists its interfaces and makes one TCP connection attempt
(1 s timeout, nothing sent) to 127.0.0.1 on a port this test listens on and
one to 10.255.255.1:80.

What must hold: it has only a loopback interface, both attempts fail
(refused on its own empty loopback, no route outside), and the test's
listener never got a connection.
"""

from __future__ import annotations

from tests.fairplay.arena import Arena, assert_fair_run

SCENARIOS = ("network",)


def test_no_network(arena: Arena) -> None:
    outcome = arena.outcome("network")
    assert_fair_run(outcome, arena)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    for seat in seats:
        assert seat.faults == []
        assert seat.one("net-interfaces") == ["lo"]
        assert seat.one("net-loopback")["outcome"] == "ECONNREFUSED"
        assert seat.one("net-external")["outcome"] == "ENETUNREACH"
    assert arena.tcp_connections() == 0
