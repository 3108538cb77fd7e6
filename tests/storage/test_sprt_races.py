"""A bot test's rows under processes that race it: matches started while the test
decides, and two `cfarena sprt` creating one test at once. On SQLite and PostgreSQL;
the racing threads each have a connection pool of their own (`db_url`).

What a decision does to the test's matches (`sprt_test` module docstring): the verdict
is fixed by the group that decided; no match starts after it (`mark_running` refuses,
whoever calls, unless it renews the lease of a match in play: its replay after the
referee's stall); the matches no one holds (scheduled, or running under a revoked
lease) are aborted "the test decided"; a match in play finishes and is stored, never
counted."""

from __future__ import annotations

import contextlib
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text

from cfarena.server.storage import Database, LeaseLost, MatchStatus, open_database
from cfarena.server.storage.connect import downgrade, upgrade
from cfarena.server.storage.models import SprtVerdict
from cfarena.server.storage.sprt_store import GroupPoint, SprtTestInfo
from cfarena.server.tournament.schedule import group_key

from .helpers import bots, count, plan, result

DECIDED = "the bot test decided before it was played"


def _test_with_groups(db: Database, groups: int, seatings: int = 2,
                      config_hash: str = "c" * 64) -> tuple[SprtTestInfo, list[str]]:
    """A test with `groups` deal groups scheduled (none counted); their match ids."""
    a, b = bots(db, "new", "old")
    info = db.create_sprt_test("sprt new vs old", "new", "old", {}, config_hash)
    plans = [plan(group_key(g, s), [a, b] if s % 2 == 0 else [b, a], seed=g)
             for g in range(groups) for s in range(seatings)]
    assert db.count_sprt_groups(info.id, 0, [], 0, SprtVerdict.CONTINUE, plans)
    return info, [f"T{info.tournament_id}-{p.key}" for p in plans]


def _status(db: Database, match_id: str) -> tuple[str, str | None]:
    detail = db.get_match(match_id)
    assert detail is not None
    return detail.match.status.value, detail.match.reason


def test_a_decided_test_starts_no_match_and_lets_the_one_in_play_finish(db: Database) -> None:
    """A worker that took a job before the decision and starts its match after it (its
    check of the verdict came first): refused, before and after the decided aborts,
    which touch only what no one holds. The match in play renews its own lease (its
    replay after a stall) and is stored; the verdict stays the decision's."""
    info, ids = _test_with_groups(db, 3)
    in_play = db.mark_running(ids[0])  # g0-s0, in play at the decision
    stalled = ids[2]  # g1-s0: its worker was taken for dead (lease revoked)
    db.mark_running(stalled)
    assert db.revoke_lease(stalled)
    assert db.count_sprt_groups(info.id, 0, [GroupPoint(0, 1.0, 3.1)], 2, SprtVerdict.H1)
    # between the decision and its aborts: the late worker's start is refused
    with pytest.raises(LeaseLost, match="decided"):
        db.mark_running(ids[1])
    assert _status(db, ids[1]) == ("scheduled", None)
    assert db.abort_unheld(info.tournament_id, DECIDED) == 5  # 4 scheduled, 1 revoked
    assert _status(db, ids[0]) == ("running", None)  # held: left to finish
    for mid in ids[1:]:
        assert _status(db, mid) == ("aborted", DECIDED)
        with pytest.raises(LeaseLost, match="decided"):  # after the aborts: refused too
            db.mark_running(mid)
        with pytest.raises(LeaseLost):  # a stall replay of a revoked lease: refused
            db.mark_running(mid, held=in_play)
        assert _status(db, mid) == ("aborted", DECIDED)
    renewed = db.mark_running(ids[0], held=in_play)  # the match in play, replayed
    with pytest.raises(LeaseLost):  # nobody else may take it over
        db.mark_running(ids[0])
    assert db.record_match(result(ids[0], [[3, 7]], [1, 2], lease=renewed))
    assert _status(db, ids[0]) == ("finished", None)
    after = db.get_sprt_test(info.id)
    assert after is not None and (after.verdict, after.groups, after.matches) == (
        SprtVerdict.H1, 1, 2)
    assert db.abort_unheld(info.tournament_id, DECIDED) == 0  # nothing left to abort


def test_a_tournament_match_is_still_started_again_after_its_abort(db: Database) -> None:
    """The refusal is a decided test's: an aborted match of a tournament (its job failed
    for good) or of an undecided test is started again by a rerun, as before."""
    a, b = bots(db, "a", "b")
    tid = db.create_tournament("t", {"x": 1})
    [mid] = db.schedule_matches(tid, [plan("m", [a, b])])
    assert db.abort_unplayed(mid, "its job failed")
    db.mark_running(mid)
    _info, ids = _test_with_groups(db, 1, config_hash="d" * 64)
    assert db.abort_unplayed(ids[0], "its job failed")
    db.mark_running(ids[0])
    assert _status(db, mid)[0] == _status(db, ids[0])[0] == "running"


ROUNDS = 4
MATCHES = 8
STARTERS = 4


def test_starts_racing_the_decision_either_precede_it_or_are_refused(db_url: str) -> None:
    """Workers start the test's matches while another process decides and aborts: each
    match is started or aborted by the decision, never both (a start after the abort
    would play a match of a decided test)."""
    stores = [open_database(db_url) for _ in range(STARTERS + 1)]
    try:
        for r in range(ROUNDS):
            info, ids = _test_with_groups(stores[0], MATCHES // 2,
                                          config_hash=f"{r:064d}")
            started: dict[str, str] = {}
            go = threading.Barrier(STARTERS + 1)

            def start(n: int, ids: list[str] = ids, started: dict[str, str] = started,
                      go: threading.Barrier = go) -> None:
                mine = ids[n::STARTERS]
                go.wait(30)
                for mid in mine:
                    with contextlib.suppress(LeaseLost):
                        started[mid] = stores[n].mark_running(mid)

            def decide(info: SprtTestInfo = info, go: threading.Barrier = go) -> int:
                db = stores[STARTERS]
                go.wait(30)
                threading.Event().wait(random.uniform(0, 0.02))
                assert db.count_sprt_groups(info.id, 0, [], 0, SprtVerdict.H0)
                return db.abort_unheld(info.tournament_id, DECIDED)

            with ThreadPoolExecutor(STARTERS + 1) as pool:
                starts = [pool.submit(start, n) for n in range(STARTERS)]
                aborted = pool.submit(decide)
                for s in starts:
                    s.result()
            statuses = {mid: _status(stores[0], mid) for mid in ids}
            assert aborted.result() == MATCHES - len(started)
            for mid, (status, reason) in statuses.items():
                if mid in started:
                    assert status == MatchStatus.RUNNING.value, (r, mid, status, reason)
                else:
                    assert (status, reason) == ("aborted", DECIDED), (r, mid)
    finally:
        for store in stores:
            store.close()


def test_two_creates_of_one_test_at_once_make_one_test(db_url: str) -> None:
    """Two `cfarena sprt` of the same test (two terminals, two machines on one
    PostgreSQL) create it at the same moment: one test and one tournament, which both
    get."""
    racers = 4
    stores = [open_database(db_url) for _ in range(racers)]
    go = threading.Barrier(racers)

    def create(n: int, config_hash: str) -> int:
        go.wait(30)
        return stores[n].create_sprt_test("sprt a vs b", "a", "b", {"seed": n},
                                          config_hash).id

    try:
        for round_ in range(3):
            digest = f"{round_:x}" * 64
            with ThreadPoolExecutor(racers) as pool:
                got = list(pool.map(create, range(racers), [digest] * racers))
            assert len(set(got)) == 1, got
            found = stores[0].find_sprt_test(digest)
            assert found is not None and found.id == got[0]
        assert count(stores[0], "sprt_tests") == count(stores[0], "tournaments") == 3
        # the winner's row: its config (a drawn seed), as every creator reads it back
        seeds = {stores[n].get_sprt_test(got[0]).config["seed"]  # type: ignore[union-attr]
                 for n in range(racers)}
        assert len(seeds) == 1
    finally:
        for store in stores:
            store.close()


def test_0009_keeps_the_newest_of_two_tests_of_one_configuration(db_url: str) -> None:
    """A database where two creates raced before 0009 holds two tests of one hash: the
    newest (the one `find_sprt_test` found) keeps it, the older keeps its rows under a
    hash of its own; a downgrade and upgrade again changes nothing more."""
    db = open_database(db_url)
    try:
        first = db.create_sprt_test("sprt a vs b", "a", "b", {}, "e" * 64)
        downgrade(db.engine, "0008")
        with db.engine.begin() as conn:  # the racing create of before
            conn.execute(text("INSERT INTO tournaments (name, config, config_hash, status, "
                              "created_at) SELECT name, config, config_hash, status, "
                              "created_at FROM tournaments"))
            conn.execute(text(
                "INSERT INTO sprt_tests (tournament_id, new_bot, old_bot, config, "
                "config_hash, verdict, groups, matches, llr, created_at) SELECT "
                "(SELECT max(id) FROM tournaments), new_bot, old_bot, config, config_hash, "
                "verdict, groups, matches, llr, created_at FROM sprt_tests"))
        upgrade(db.engine)
        newest = db.find_sprt_test("e" * 64)
        assert newest is not None and newest.id > first.id
        older = db.get_sprt_test(first.id)
        assert older is not None and older.config_hash != "e" * 64
        assert count(db, "sprt_tests") == 2
        downgrade(db.engine, "0008")
        upgrade(db.engine)
        assert [t.config_hash for t in db.list_sprt_tests()] == [older.config_hash, "e" * 64]
    finally:
        db.close()
