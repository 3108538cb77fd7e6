"""The PostgreSQL harness's `query` (tests/harness/postgres.py): a test's polls share one
kept connection, which is opened anew when the server dropped it; writes never use it."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.harness.postgres import PgCluster, close_kept, conninfo, query

BACKEND = "select pg_backend_pid()"


@pytest.mark.postgres
def test_polls_share_a_connection_that_is_opened_anew_after_the_server_dropped_it(
        pg_cluster: PgCluster) -> None:
    url = pg_cluster.create_database("pg_harness_query")
    [(first,)] = query(url, BACKEND)
    assert query(url, BACKEND) == [(first,)]  # kept: no new server process per poll
    # the server ends that session (as an outage would): the next poll reconnects
    with psycopg.connect(conninfo(url), autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", (first,))
    [(second,)] = query(url, BACKEND)
    assert second != first
    # a write runs on a connection of its own and is committed once
    assert query(url, "create table t (n int)") == []
    assert query(url, "insert into t values (1) returning n") == [(1,)]
    assert query(url, "select count(*) from t") == [(1,)]
    assert query(url, BACKEND) == [(second,)]
    # a statement's own error reaches the test, and the kept connection stays
    with pytest.raises(psycopg.errors.UndefinedTable):
        query(url, "select * from missing")
    assert query(url, BACKEND) == [(second,)]
    close_kept()
    with psycopg.connect(conninfo(url), autocommit=True) as admin:
        deadline = time.monotonic() + 10
        while others := admin.execute(  # a closed session leaves the list on its own time
                "select count(*) from pg_stat_activity where datname = %s "
                "and backend_type = 'client backend' and pid <> pg_backend_pid()",
                ("pg_harness_query",)).fetchone()[0]:
            assert time.monotonic() < deadline, f"{others} session(s) left open"
            time.sleep(0.05)
