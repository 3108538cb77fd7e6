"""Attack 2: a bot hunts for the tournament database and the seat logs.

`bots/hunt_files.py` is told nothing: it lists its working directory (the
referee's, where the scenario keeps `cfarena.db` and `--log-dir logs`), tries
cfarena.db, logs/ and their parents there and in $HOME, the paths on every
visible command line (`--db`, `--log-dir`, sqlite URLs), and walks the whole
visible filesystem for SQLite files, cfarena databases and seat logs; the
cheap probes again once matches have been played and logs written.

What must hold: its working directory is empty, every guessed path is
absent, no visible command line names a path, and the complete walk finds no
cfarena database, no seat log, and nothing under the scenario's directory,
while the database and the logs do exist there.
"""

from __future__ import annotations

from tests.fairplay.arena import Arena, assert_fair_run

SCENARIOS = ("hunt_files",)
GUESSES = ("cfarena.db", "cfarena.db-wal", "logs", "../cfarena.db", "../logs",
           "$HOME/cfarena.db")


def test_database_and_logs_cannot_be_found(arena: Arena) -> None:
    outcome = arena.outcome("hunt_files")
    assert_fair_run(outcome, arena)
    hidden = str(outcome.tmp)
    seats = outcome.seats("evil")
    assert len(seats) == 2
    for seat in seats:
        assert seat.faults == []
        for phase in ("start", "match"):
            near = seat.one("db-cwd", phase=phase)
            assert near["cwd"] == hidden  # started where the referee was...
            assert near["entries"] == [], near  # ...which it sees empty
            assert {g: near[g] for g in GUESSES} == dict.fromkeys(GUESSES, "ENOENT"), near
            assert seat.one("db-cmdline", phase=phase)["tried"] == {}
        walked = seat.one("db-walk")
        assert walked["complete"] is True, walked
        assert walked["files"] > 1000, walked  # it did see (and walk) the system
        assert walked["cfarena_dbs"] == [], walked
        assert walked["seat_logs"] == [], walked
        found = walked["db_candidates"] + walked["log_dirs"]
        assert not [f for f in found if f.startswith(hidden)], walked
    # there was something to find
    assert outcome.db_path.is_file()
    assert len(list(outcome.log_dir.glob("*-seat*-evil.log"))) == 2
