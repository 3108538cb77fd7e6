"""Bots that crash do not stop a tournament: their seats forfeit, the rest is played."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from cfarena.server.storage import open_database
from tests.harness.sandboxes import run_sandboxes

from .helpers import run_cli_then, run_json

CRASH_AT_FIRST_TURN = """
import os
import sys
from cfarena.sdk import Bot
from cfarena.sdk.cli import run_main

class Crash(Bot):
    def choose(self, turn):
        print("eval.so: cannot open shared object file: No such file or directory",
              file=sys.stderr, flush=True)
        os._exit(4)  # as a native crash would: no Python clean-up

raise SystemExit(run_main(Crash))
"""

# starts normally until the file `poison` appears in its (bound, read-only) directory
POISONED_LATER = """
import sys
from pathlib import Path
from cfarena.sdk import Bot
from cfarena.sdk.cli import run_main

if (Path(sys.argv[1]) / "poison").exists():
    print("poisoned: cannot load my model", file=sys.stderr, flush=True)
    sys.exit(5)

class Fine(Bot):
    def choose(self, turn):
        return turn.legal_moves[0]

raise SystemExit(run_main(Fine, sys.argv[2:]))
"""


def _faults(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "select b.name, f.kind, f.detail from faults f join bots b on b.id = f.bot_id"
        ).fetchall()


def test_a_bot_crashing_in_every_match_forfeits_each_and_the_tournament_finishes(
        tmp_path: Path) -> None:
    bot = tmp_path / "crash.py"
    bot.write_text(CRASH_AT_FIRST_TURN)
    data = run_json("run-tournament", "--bot", f"crash=python {bot}", "--bot", "random",
                    "--players", "2", "--games", "2", "--rule", "rounds=single", cwd=tmp_path)
    assert data["status"] == "finished" and data["matches"] == 4
    faults = _faults(tmp_path / "cfarena.db")
    assert len(faults) == 4  # one per match, none of an earlier attempt
    said = "eval.so: cannot open shared object file: No such file or directory"
    for name, kind, detail in faults:
        assert (name, kind) == ("crash", "disconnect")
        # public (the web page shows it): no hint, none of the organiser's paths
        assert detail == f"bot process exited with code 4: bot> {said}"
    with open_database(f"sqlite:///{tmp_path / 'cfarena.db'}") as database:
        ends = [log.exit for m in database.list_matches() for log in database.seat_logs(m.id)
                if log.exit and log.exit.startswith("disconnect")]
    # the seat's log (the organiser's and the entrant's) has the hint, on a line of its own
    assert len(ends) == 4 and all(end.split("\n") == [
        f"disconnect at turn 1: bot process exited with code 4: bot> {said}",
        f"hint: the sandbox shows only the system directories, Python's and {bot}; name more "
        "with --sandbox-bind DIR (keep the bot and what it needs, node_modules or a venv, in "
        "a directory of its own, away from the database)"] for end in ends), ends
    rows = {row["bot"]: row for row in data["standings"]}
    assert rows["crash"]["forfeits"] == 4 and rows["random"]["forfeits"] == 0
    assert run_sandboxes(tmp_path, zombies=False) == []


def test_a_bot_that_stops_starting_is_written_off_and_the_rest_is_played(tmp_path: Path
                                                                        ) -> None:
    home = tmp_path / "poisoned"
    home.mkdir()
    (home / "bot.py").write_text(POISONED_LATER)
    db = tmp_path / "cfarena.db"
    result = run_cli_then(  # poisoned once its first match is stored
        "run-tournament", "--bot", f"flaky=python {home / 'bot.py'} {home}",
        "--bot", "random", "--players", "2", "--games", "4", "--concurrency", "1",
        "--timeout-ms", "3000", "--json", cwd=tmp_path, db=db,
        then=lambda: (home / "poison").write_text(""))
    err = result.stderr
    assert result.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    with open_database(f"sqlite:///{db}") as database:
        matches = database.list_matches()
        assert len(matches) == 8 and all(m.status == "finished" for m in matches)
    written_off = [f for f in _faults(db) if f[2].startswith("not connected:")]
    assert written_off, _faults(db)
    assert all(f == ("flaky", "disconnect", "not connected: bot 'flaky' exited with code 5 "
                     "before connecting: bot> poisoned: cannot load my model") for f in written_off)
    assert run_sandboxes(tmp_path, zombies=False) == []


# connects, drops its stream at its first Turn, then stays alive doing nothing
DROPS_AND_LINGERS = """
import os, queue, time
import grpc
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub

outbox = queue.Queue()
outbox.put(pb.BotMessage(hello=pb.Hello(token=os.environ["CFARENA_TOKEN"],
                                        protocol="cfarena.v1", capacity=1)))
channel = grpc.insecure_channel(os.environ["CFARENA_SERVER"])
call = ArenaStub(channel).Play(iter(outbox.get, None))
for message in call:
    if message.WhichOneof("kind") == "turn":
        call.cancel()
        break
print("dropped my stream; staying alive", flush=True)
time.sleep(120)
"""


def test_a_bot_that_drops_its_stream_and_stays_alive_forfeits_and_is_stopped(
        tmp_path: Path) -> None:
    bot = tmp_path / "linger.py"
    bot.write_text(DROPS_AND_LINGERS)
    started = time.monotonic()
    data = run_json("run-tournament", "--bot", f"linger=python {bot}", "--bot", "random",
                    "--players", "2", "--games", "1", "--rule", "rounds=single", cwd=tmp_path)
    assert time.monotonic() - started < 60  # nobody waited for the lingering process
    assert data["status"] == "finished" and data["matches"] == 2
    faults = _faults(tmp_path / "cfarena.db")
    assert [(n, k) for n, k, _ in faults] == [("linger", "disconnect")] * 2
    with open_database(f"sqlite:///{tmp_path / 'cfarena.db'}") as database:
        for match in database.list_matches():
            logs = {log.seat: log for log in database.seat_logs(match.id)}
            lingering = [log for log in logs.values() if "staying alive" in log.output]
            assert len(lingering) == 1  # its end: the fault, then that it was stopped
            # (the referee sees the cancelled call end or be cancelled, as gRPC delivers it)
            assert lingering[0].exit in (
                f"disconnect at turn 1: stream {how}; stopped after the match"
                for how in ("cancelled", "ended")), lingering[0].exit
    assert run_sandboxes(tmp_path, zombies=False) == []


# plays normally, but at its first Turn hammers the referee with 200 reconnections
# with its own (already used) credential from a second thread
RECONNECT_STORM = """
import os, threading, queue
import grpc
from cfarena.sdk import Bot
from cfarena.sdk.cli import run_main
from cfarena.v1 import arena_pb2 as pb
from cfarena.v1.arena_pb2_grpc import ArenaStub

def storm():
    codes = {}
    for _ in range(200):
        channel = grpc.insecure_channel(os.environ["CFARENA_SERVER"])
        hello = pb.BotMessage(hello=pb.Hello(token=os.environ["CFARENA_TOKEN"],
                                             protocol="cfarena.v1", capacity=1))
        try:
            for _message in ArenaStub(channel).Play(iter([hello])):
                pass
            codes["OK"] = codes.get("OK", 0) + 1
        except grpc.RpcError as err:
            codes[err.code().name] = codes.get(err.code().name, 0) + 1
        channel.close()
    print("STORM", sorted(codes.items()), flush=True)

class Stormy(Bot):
    started = False
    def choose(self, turn):
        if not Stormy.started:
            Stormy.started = True
            threading.Thread(target=storm).start()
        return turn.legal_moves[0]

raise SystemExit(run_main(Stormy))
"""


def test_a_reconnect_storm_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    bot = tmp_path / "storm.py"
    bot.write_text(RECONNECT_STORM)
    data = run_json("run-tournament", "--bot", f"stormy=python {bot}", "--bot", "random",
                    "--players", "2", "--games", "1", "--rule", "rounds=2",
                    "--timeout-ms", "5000", cwd=tmp_path)
    assert data["status"] == "finished" and data["matches"] == 2
    assert _faults(tmp_path / "cfarena.db") == []  # its own match went on undisturbed
    with open_database(f"sqlite:///{tmp_path / 'cfarena.db'}") as database:
        storms = [line for match in database.list_matches()
                  for log in database.seat_logs(match.id)
                  for line in log.output.splitlines() if line.startswith("STORM")]
    assert storms, "the storm never ran"
    for line in storms:  # every reconnection was refused
        assert line == "STORM [('PERMISSION_DENIED', 200)]", line
