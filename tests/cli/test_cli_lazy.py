"""`cfarena` loads a command's module only when that command runs or shows its help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from cfarena.server.cli import COMMANDS, app, command

from .helpers import main_reports


def test_each_listed_summary_is_the_first_paragraph_of_the_commands_help() -> None:
    group = command()
    assert group.list_commands(None) == list(COMMANDS)
    for name, entry in COMMANDS.items():
        loaded = group.get_command(None, name)
        assert loaded is not None and loaded.name == name
        assert (loaded.help or "").split("\n\n")[0] == entry.summary, name


def _help_loading(args: list[str], watched: str) -> tuple[str, str]:
    """What `cfarena ARGS` (a help) prints, and which modules it loaded of those the
    expression `watched` (of a module name `m`) picks, in a fresh interpreter."""
    code = ("import sys\n"
            "from cfarena.server.cli import command\n"
            "try:\n"
            f"    command().main({args!r}, prog_name='cfarena', standalone_mode=False)\n"
            "finally:\n"
            f"    print(sorted(m for m in sys.modules if {watched}), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    return out.stdout, out.stderr.strip()


def test_the_group_help_lists_every_command_and_loads_none() -> None:
    shown, loaded = _help_loading(
        ["--help"], "m.startswith('cfarena.server.cli.') and m != 'cfarena.server.cli.common'"
        " or m.split('.')[0] in ('sqlalchemy', 'alembic', 'grpc', 'uvicorn')")
    assert loaded == "[]"
    for name in COMMANDS:
        assert f" {name} " in shown


def test_a_mistyped_command_is_still_matched_against_every_name() -> None:
    result = CliRunner().invoke(app, ["standing"])
    assert result.exit_code == 2
    assert "Did you mean 'standings'?" in result.output
    assert typer.main.get_command(app).get_command(None, "nosuch") is None


def test_a_commands_help_loads_neither_pydantic_nor_what_the_command_runs() -> None:
    # typer coerces option values through pydantic (0.2 s to import), and the replay
    # tools are the command's work: `cfarena replay --help` needs neither
    shown, loaded = _help_loading(["replay", "--help"], "m.split('.')[0] == 'pydantic'"
                                  " or m.startswith('cfarena.server.replay')")
    assert loaded == "[]"
    assert "Usage: cfarena replay" in shown


def test_the_database_commands_help_loads_no_storage() -> None:
    # SQLAlchemy and Alembic (about a second) are loaded when a command opens its
    # database (cli.common.database), not for its help
    for args in (["matches", "--help"], ["show", "--help"], ["export", "--help"],
                 ["standings", "--help"], ["bots", "--help"], ["bots", "show", "--help"]):
        shown, loaded = _help_loading(args, "m.split('.')[0] in ('sqlalchemy', 'alembic')"
                                      " or m.startswith('cfarena.server.storage')")
        assert loaded == "[]", args
        assert f"Usage: cfarena {' '.join(args[:-1])}" in shown, args


def test_a_serve_without_an_http_port_loads_no_web(tmp_path: Path) -> None:
    # FastAPI, Jinja2, uvicorn and Starlette (0.3 s) are loaded for the HTTP server
    # alone; an arena that serves no web page starts without them
    url = f"sqlite:///{tmp_path / 'a.db'}"
    web = ("sorted(m for m in {n.split('.')[0] for n in sys.modules} if m in ('fastapi', "
           "'jinja2', 'uvicorn', 'starlette', 'numpy')) + [m for m in "
           "('cfarena.server.web',) if m in sys.modules]")
    main_reports(web, "bots", "add", "someone", "--db", url, cwd=tmp_path)
    serve = ["serve", "--max-matches", "0", "--port", "0", "--db", url]
    shown, without = main_reports(web, *serve, cwd=tmp_path)
    assert "stopped after 0 matches" in shown
    assert without == "[]"
    _shown, with_web = main_reports(web, *serve, "--http-port", "0", cwd=tmp_path)
    assert with_web == "['fastapi', 'jinja2', 'starlette', 'uvicorn', 'cfarena.server.web']"
