"""Control: the /proc and file probes do catch an unsandboxed bot.

The same `bots/snoop_proc.py` and `bots/hunt_files.py` (attacks 1 and 2),
playing each other with `--no-sandbox`: they must now see what the sandbox
hides — other processes (not bwrap's init as PID 1), another bot process's
CFARENA_TOKEN, the referee's command line, the tournament database in their
working directory, and the log directory named on the referee's command
line. This shows the probes would notice a broken sandbox.
"""

from __future__ import annotations

import os

from tests.fairplay.arena import Arena, assert_fair_run

SCENARIOS = ("control",)


def test_probes_see_what_an_unsandboxed_bot_can_see(arena: Arena) -> None:
    outcome = arena.outcome("control")
    assert_fair_run(outcome, arena)
    snoops = outcome.seats("snoop")
    hunts = outcome.seats("hunt")
    assert len(snoops) == 2 and len(hunts) == 2
    for seat in snoops:
        visible = seat.one("proc-visible", phase="match")
        assert os.path.basename(str(visible["pid1"])) != "bwrap", visible
        environ = seat.one("proc-environ", phase="match")
        assert environ["foreign_tokens"] >= 1, environ  # the other bot's live process
        assert seat.one("proc-referee", phase="match")["visible"] is True
    db, logs = str(outcome.db_path), str(outcome.log_dir)
    for seat in hunts:
        near = seat.one("db-cwd", phase="start")
        assert "cfarena.db" in near["entries"], near
        assert near["cfarena.db"] == "CFARENA DATABASE READABLE", near
        tried = seat.one("db-cmdline", phase="start")["tried"]
        assert tried.get(db) == "CFARENA DATABASE READABLE", tried
        assert tried.get(logs, "").startswith("LISTED"), tried
        assert seat.one("db-walk")["cfarena_dbs"] != []
