"""A bot that stops answering is not seated again on the `serve` ladder until it answers
or a grace passes: a bot frozen with SIGSTOP is charged one timeout, not one per table
the ladder could form until the keepalive drops it. Real `cfarena serve`, real bot
processes, a real SQLite file."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

from cfarena.server.referee.transport import DEFAULT_KEEPALIVE
from cfarena.server.storage import hash_token, open_database
from tests.harness.serve import Arena

# after the freeze: the keepalive drops the frozen bot's connection only after 5-10 s;
# until then the ladder sees it connected (and seated it at every chance before the fix)
WINDOW_S = DEFAULT_KEEPALIVE.time_ms / 1000 + 1


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(db, timeout=5) as conn:
        return int(conn.execute(sql).fetchone()[0])


def _finished_with(db: Path, bot: str) -> int:
    return _count(db, "select count(*) from matches m join match_seats s on s.match_id = m.id "
                      f"join bots b on b.id = s.bot_id where b.name = '{bot}' "
                      "and m.status = 'finished'")


def _timeouts_of(db: Path, bot: str) -> int:
    return _count(db, "select count(*) from faults f join bots b on b.id = f.bot_id "
                      f"where b.name = '{bot}' and f.kind = 'timeout'")


def test_a_frozen_bot_is_charged_one_timeout_not_one_per_table(tmp_path: Path) -> None:
    db = tmp_path / "cfarena.db"
    names = ("frozen", "a", "b")
    with open_database(f"sqlite:///{db}") as store:
        for name in names:
            store.register_bot(name, hash_token(f"secret-{name}"))
    arena = Arena(tmp_path, f"sqlite:///{db}")
    err = arena.err_path("serve")
    try:
        bound = arena.serve("--players", "2", "--rule", "rounds=1", "--timeout-ms", "500",
                            "--concurrency", "2")
        serve = arena.procs["serve"]
        for name in names:
            arena.dial_in(name, "greedy", f"127.0.0.1:{bound.bots}", f"secret-{name}",
                          "--retries", "0")
        arena.wait("the bot to play", lambda: _finished_with(db, "frozen") >= 2, 60)
        os.killpg(arena.procs["frozen"].pid, signal.SIGSTOP)
        others_before = _finished_with(db, "a") + _finished_with(db, "b")
        time.sleep(WINDOW_S)  # the audit saw 3-10 timeouts in 15 s
        others_after = _finished_with(db, "a") + _finished_with(db, "b")
        os.killpg(arena.procs["frozen"].pid, signal.SIGCONT)
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
        assert serve.returncode == 0, err.read_text()[-3000:]
    finally:
        arena.close()  # SIGKILL: the frozen bot too
    # the ladder went on without it (its absence is not an idle arena)...
    assert others_after - others_before >= 4, err.read_text()[-3000:]
    # ...and it was charged the one Turn it froze on, nothing more
    assert _timeouts_of(db, "frozen") == 1, err.read_text()[-3000:]
    assert _count(db, "select count(*) from faults f join bots b on b.id = f.bot_id "
                      "where b.name = 'frozen'") == 1
