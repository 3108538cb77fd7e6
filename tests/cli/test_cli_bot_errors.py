"""A bot that cannot find a module says so, in run-tournament's own sandbox: the module
error (not the runtime's last words) and the --sandbox-bind hint, one line per problem on
the CLI's stderr, and the whole output kept (--log-dir, the seat's stored log). A Node.js
bot whose node_modules is not shown fails to start; a Python SDK bot (forked) whose own
module beside it vanishes mid-tournament is written off, its seats' logs say why."""

from __future__ import annotations

from pathlib import Path

from cfarena.server.storage import open_database
from tests.harness.sandboxes import run_sandboxes

from .helpers import run_cli, run_cli_then

NODE_BOT = "const grpc = require('@grpc/grpc-js');\nconsole.log('connected', grpc);\n"

# imports its own module beside it (the directory is bound with --sandbox-bind)
PYTHON_BOT = """
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper
from cfarena.sdk import Bot

class Plain(Bot):
    def choose(self, turn):
        return helper.FIRST
"""

HINT = "name more with --sandbox-bind DIR"


def test_a_missing_module_is_quoted_with_the_sandbox_bind_hint(tmp_path: Path) -> None:
    # Node.js: its error comes near the top of its trace, "Node.js v..." last
    node_home = tmp_path / "js"
    node_home.mkdir()
    (node_home / "bot.js").write_text(NODE_BOT)
    logs = tmp_path / "js-logs"
    result = run_cli("run-tournament", "--bot", f"js=node {node_home / 'bot.js'}", "--bot",
                     "random", "--players", "2", "--log-dir", str(logs),
                     "--db", f"sqlite:///{tmp_path / 'js.db'}", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    line, hint = result.stderr.strip().splitlines()[-2:]  # the hint: a line of its own
    assert line.startswith("error: bot 'js' exited with code 1 before connecting: "
                           "bot> Error: Cannot find module '@grpc/grpc-js' | "
                           f"bot> at Object.<anonymous> ({node_home / 'bot.js'}:1:"), line
    assert hint.startswith("hint: the sandbox shows only the system directories, Python's "
                           f"and {node_home / 'bot.js'}") and HINT in hint, hint
    assert "Node.js v" not in line
    started = (logs / "start-js.log").read_text()  # no match to store it with
    assert "Require stack:" in started and "Node.js v" in started

    # Python, forked by its fork server: starts, then its module is gone
    home = tmp_path / "py"
    home.mkdir()
    (home / "bot.py").write_text(PYTHON_BOT)
    (home / "helper.py").write_text("FIRST = 0\n")
    logs = tmp_path / "py-logs"
    db = tmp_path / "py.db"
    result = run_cli_then(  # its module is gone once its first match is stored
        "run-tournament", "--bot", f"lazy=python -m cfarena.sdk run {home / 'bot.py'}",
        "--bot", "random", "--players", "2", "--games", "3", "--concurrency", "1",
        "--rule", "rounds=single", "--sandbox-bind", str(home), "--log-dir", str(logs),
        "--db", f"sqlite:///{db}", "--json", cwd=tmp_path, db=db,
        then=(home / "helper.py").unlink)
    err = result.stderr
    assert result.returncode == 0, err[-3000:]
    missing = "ModuleNotFoundError: No module named 'helper'"
    lines = err.splitlines()
    warned = [i for i, ln in enumerate(lines) if "before connecting" in ln]
    assert warned and all("bot> " in lines[i] and missing in lines[i]
                          and lines[i + 1].startswith("hint: ")
                          and HINT in lines[i + 1] for i in warned), err[-3000:]
    with open_database(f"sqlite:///{db}") as database:
        seats = [(m.id, log) for m in database.list_matches()
                 for log in database.seat_logs(m.id)
                 if log.exit and log.exit.startswith("bot 'lazy'")]  # written off
        assert seats, [(m.id, database.seat_logs(m.id)) for m in database.list_matches()]
        for match_id, log in seats:
            assert missing in log.exit and HINT in log.exit and str(home) in log.exit
            detail = database.get_match(match_id)  # public: the fault goes without the hint
            assert detail and all(HINT not in f.detail and "hint: " not in f.detail
                                  for f in detail.faults if f.seat == log.seat)
            assert missing in log.output  # what its last process printed
            assert missing in next(logs.glob(f"{match_id}-seat{log.seat}-lazy.log")).read_text()
    assert run_sandboxes(tmp_path, zombies=False) == []
