"""The web page's pure pieces, one at a time: what of a match may be shown, the live
hub (bounded queues, slow viewers dropped, a viewer cap, messages only when watched),
the rating chart, a bot page's rating points and the admin token file."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from cfarena.engine import Rules, apply_move, legal_moves, needs_decision, new_match
from cfarena.match.record import MatchRecord, TimeControl
from cfarena.server.credentials import AdminTokenError, hash_token, read_admin_token
from cfarena.server.storage import MatchStatus, StoredMatch, open_database
from cfarena.server.web import LiveHub
from cfarena.server.web import data as web_data
from cfarena.server.web.chart import rating_chart
from cfarena.server.web.data import WebData
from cfarena.server.web.disclosure import deal_revealed, is_over
from cfarena.server.web.hub import TooManyFromClient, client_key

from .leaderboard_data import POOL, fill

F, R, A, S = (MatchStatus.FINISHED, MatchStatus.RUNNING, MatchStatus.ABORTED,
              MatchStatus.SCHEDULED)


@pytest.mark.parametrize(("deal", "shown"), [
    ([], False),                                     # no such match
    ([("m", None, F, True)], True),                  # a ladder match, finished
    ([("m", None, R, False)], False),                # running
    ([("m", None, S, False)], False),                # pending
    ([("m", None, A, True)], True),                  # a ladder match cut off: never dealt again
    ([("m", None, A, False)], False),                # marked aborted by another arena: its
                                                     # own (silent, not dead?) may play on
    ([("m", 1, A, True)], False),                    # a tournament's: played again, same seed
    ([("r0", 1, F, True), ("r1", 1, F, True), ("r2", 1, F, True)], True),  # every rotation over
    ([("r0", 1, F, True), ("r1", 1, R, False), ("r2", 1, F, True)], False),  # r1 running
    ([("r0", 1, F, True), ("r1", 1, S, False)], False),  # rotation 2 not played yet
    ([("r0", 1, F, True), ("r1", 1, A, True)], False),   # rotation 2 to be played again
    ([("r0", 1, F, True), ("x", None, R, False)], False),  # the same seed elsewhere, running
])
def test_a_deal_is_shown_only_when_every_match_of_it_is_over(
        deal: list[tuple[str, int | None, MatchStatus, bool]], shown: bool) -> None:
    assert deal_revealed(deal) is shown


def test_over_means_never_played_again() -> None:
    cases = [(None, F, True), (None, A, True), (None, A, False), (1, F, True), (1, A, True),
             (None, R, False), (None, S, False)]
    assert [is_over(*case) for case in cases] == [True, True, False, True, False, False,
                                                   False]


def _record(match_id: str, status: MatchStatus = F) -> MatchRecord:
    return MatchRecord(match_id, Rules.preset("standard"), 2, 5, ["a", "b"], TimeControl(),
                       status=status)


def _state(seed: int = 5):  # type: ignore[no-untyped-def]
    return new_match(Rules.preset("standard").with_options(rounds="single"), players=2,
                     seed=seed)


def _drain(viewer) -> list[tuple[str, dict]]:  # type: ignore[no-untyped-def, type-arg]
    out = []
    while not viewer.queue.empty():
        item = viewer.queue.get_nowait()
        if item is None:
            out.append(("<end>", {}))
        else:
            out.append((item[0], json.loads(item[1])))
    return out


def _decide(state) -> None:  # type: ignore[no-untyped-def]
    """One decision, then the forced moves after it, as the referee plays."""
    apply_move(state, legal_moves(state)[0])
    while not state.is_over and not needs_decision(legal_moves(state)):
        apply_move(state, legal_moves(state)[0])


def test_a_match_nobody_watches_costs_no_message() -> None:
    async def run() -> None:
        hub = LiveHub(coalesce_s=0)
        state = _state()
        hub.playing("m1", state)
        for _ in range(20):
            _decide(state)
            hub.tick()
        assert hub.messages == 0
        viewer = hub.watch_match("m1")
        assert hub.messages == 0  # its snapshot comes with the hub's next look
        hub.tick()
        _decide(state)
        hub.tick()
        assert hub.messages == 2
        (kind0, snap), (kind1, update) = _drain(viewer)
        assert (kind0, kind1) == ("snapshot", "update")
        # the update carries only the events after the snapshot, numbered on from it
        assert [e["i"] for e in update["events"]] == list(
            range(snap["event_count"], update["event_count"]))
    asyncio.run(run())


def test_viewers_see_ended_then_stored_then_the_stream_ends() -> None:
    async def run() -> None:
        hub = LiveHub()
        early = hub.watch_match("m2")  # before the match starts
        state = _state()
        hub.playing("m2", state)
        late = hub.watch_match("m2")
        hub.ended("m2", _record("m2"))
        hub.stored(StoredMatch("m2"))
        for viewer in (early, late):
            assert [k for k, _ in _drain(viewer)] == ["snapshot", "ended", "stored", "<end>"]
        assert hub.viewers == 0
    asyncio.run(run())


def test_a_slow_viewer_is_dropped_not_waited_for() -> None:
    async def run() -> None:
        hub = LiveHub(queue_size=4, coalesce_s=0)
        state = _state()
        hub.playing("m3", state)
        slow, fast = hub.watch_match("m3"), hub.watch_match("m3")
        for _ in range(10):
            _decide(state)
            hub.tick()  # synchronous: it cannot wait for anybody
            _drain(fast)
        assert slow.dropped and not fast.dropped
        assert hub.dropped == 1 and hub.viewers == 1
        assert [k for k, _ in _drain(slow)] == ["<end>"]  # its stream ends at once
    asyncio.run(run())


def test_the_number_of_viewers_is_capped() -> None:
    async def run() -> None:
        hub = LiveHub(max_viewers=2)
        first = hub.watch_ladder()
        hub.watch_match("x")
        with pytest.raises(Exception, match="too many viewers"):
            hub.watch_ladder()
        first.close()
        hub.watch_ladder()  # a place is free again
        assert hub.viewers == 2
    asyncio.run(run())


def test_viewers_of_matches_not_played_here_leave_nothing_behind() -> None:
    """A stream of a match running on another arena of the database waits here; once
    its viewers are gone the hub keeps nothing of that match (one entry per such match
    would grow for as long as the arena runs)."""
    async def run() -> None:
        hub = LiveHub()
        for n in range(50):
            first, second = hub.watch_match(f"elsewhere-{n}"), hub.watch_match(f"elsewhere-{n}")
            first.close()
            assert hub.running() == [] and hub.viewers == 1
            second.close()
        assert hub.viewers == 0
        assert not hub._waiting  # what the hub keeps is the point
    asyncio.run(run())


def test_one_client_address_gets_its_share_of_the_viewers() -> None:
    async def run() -> None:
        hub = LiveHub(max_viewers=10, max_per_client=2)
        first = hub.watch_ladder("10.0.0.1")
        hub.watch_match("x", "10.0.0.1")
        with pytest.raises(TooManyFromClient, match="from your address"):
            hub.watch_match("y", "10.0.0.1")
        hub.watch_ladder("10.0.0.2")  # another address is not held back
        first.close()
        hub.watch_ladder("10.0.0.1")  # its place is free again
        assert hub.viewers == 3
    asyncio.run(run())


@pytest.mark.parametrize(("host", "key"), [
    ("10.1.2.3", "10.1.2.3"), ("::ffff:10.1.2.3", "10.1.2.3"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"), ("2001:db8:1:2::ff", "2001:db8:1:2::/64"),
    ("testclient", "testclient"), (None, None), ("", None)])
def test_streams_are_counted_per_address_and_ipv6_per_64(host: str | None,
                                                         key: str | None) -> None:
    assert client_key(host) == key


def test_the_ladder_stream_tells_started_ended_finished() -> None:
    async def run() -> None:
        hub = LiveHub()
        viewer = hub.watch_ladder()
        hub.playing("m4", _state())
        hub.ended("m4", _record("m4"))
        hub.stored(StoredMatch("m4"))
        hub.stored(StoredMatch("m5", status=MatchStatus.ABORTED))
        assert _drain(viewer) == [("started", {"match": "m4"}),
                                  ("ended", {"match": "m4", "status": "finished"}),
                                  ("finished", {"match": "m4", "status": "finished"}),
                                  ("aborted", {"match": "m5", "status": "aborted"})]
    asyncio.run(run())


def test_live_messages_hold_no_hidden_tile() -> None:
    async def run() -> None:
        hub = LiveHub(coalesce_s=0)
        state = _state(9)
        hub.playing("m6", state)
        viewer = hub.watch_match("m6")
        while not state.is_over:
            _decide(state)
            hidden = {str(t) for s in range(2) for t in state.hand(s)} | {
                str(t) for t in state.boneyard()}
            hub.tick()
            for _kind, msg in _drain(viewer):
                text = json.dumps(msg)
                assert not {t for t in re.findall(r"\d+-\d+", text)} & hidden
                assert {"hands", "hand", "boneyard_tiles", "seed"}.isdisjoint(msg)
    asyncio.run(run())


def test_rating_chart() -> None:
    svg = rating_chart([1500, 1520.5, 1490, 1610], ["a", "b", "c", "d"])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'data-points="4"' in svg and svg.count("<circle") == 4
    assert "<title>d: 1610</title>" in svg
    assert "no rated match yet" in rating_chart([])
    assert rating_chart([1500]).count("<circle") == 1  # one point: no division by zero
    assert "&lt;script&gt;" in rating_chart([1, 2], ["<script>", "x"])


def test_admin_token_file(tmp_path: Path) -> None:
    good = tmp_path / "t"
    good.write_text("  0123456789abcdef0123\n")
    assert read_admin_token(good) == "0123456789abcdef0123"
    short = tmp_path / "s"
    short.write_text("short\n")
    with pytest.raises(AdminTokenError, match="at least 16 characters"):
        read_admin_token(short)
    with pytest.raises(AdminTokenError, match="no such file"):
        read_admin_token(tmp_path / "missing")


def test_a_fast_match_is_sent_at_most_every_coalesce_s() -> None:
    async def run() -> None:
        hub = LiveHub(coalesce_s=0.05)
        state = _state(3)
        hub.playing("m7", state)
        viewer = hub.watch_match("m7")
        await asyncio.sleep(0.06)  # the hub's clock: the viewer's snapshot
        assert hub.messages == 1
        for _ in range(30):  # thirty decisions at once: one message
            _decide(state)
        assert hub.messages == 1
        await asyncio.sleep(0.06)
        assert hub.messages == 2
        snapshot, update = _drain(viewer)
        assert (snapshot[0], update[0]) == ("snapshot", "update")
        assert update[1]["event_count"] == state.event_count  # nothing was lost
        assert [e["i"] for e in update[1]["events"]] == list(
            range(snapshot[1]["event_count"], state.event_count))
        await asyncio.sleep(0.12)
        assert hub.messages == 2  # nothing new: nothing sent
        while not state.is_over:
            _decide(state)
        hub.ended("m7", _record("m7"))  # what is new goes out at once, then ended
        assert [k for k, _ in _drain(viewer)] == ["update", "ended"]
        await asyncio.sleep(0.12)
        assert hub.messages == 3  # the clock stopped with the match: nothing more
        assert hub._ticker is None
    asyncio.run(run())


def test_made_up_pools_are_not_kept(tmp_path: Path) -> None:
    """`?pool=` is anyone's to choose: a pool without matches is answered, never
    cached (each made-up name of 8 KB would stay in memory for good)."""
    with open_database(f"sqlite:///{tmp_path / 'arena.db'}") as db:
        db.register_bot("ruby", hash_token("token-of-ruby-0123456789"))
        data = WebData(db)
        for i in range(50):
            pool = f"{i}-" + "x" * 8000
            assert data.leaderboard(pool) == {"pool": pool, "finished": 0, "rows": []}
            assert data.bot("ruby", pool)["rating_history"] == []
        # nothing kept per pool (the rating history is read from the database)
        assert data._leaderboard == {}
        assert [v for v in vars(data).values() if isinstance(v, dict) and v] == []


def test_a_bots_page_shows_its_latest_rating_points_numbered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot page reads only the latest `RATING_POINTS` points of its rating history
    (a page's work and memory do not grow with the matches played), each numbered
    among all of the bot's rated matches."""
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    fill(url)  # alice: three matches as version 1, then three as version 2
    with open_database(url) as db:
        data = WebData(db)
        everything = data.bot("alice", POOL)["rating_history"]
        assert [(p["number"], p["version"]) for p in everything] == [
            (1, "1"), (2, "1"), (3, "1"), (4, "2"), (5, "2"), (6, "2")]
        monkeypatch.setattr(web_data, "RATING_POINTS", 4)
        assert data.bot("alice", POOL)["rating_history"] == everything[2:]
