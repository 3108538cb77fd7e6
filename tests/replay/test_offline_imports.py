"""Offline tools (game logs, replay, verification, the match law) load no gRPC and no referee."""

from __future__ import annotations

import subprocess
import sys

OFFLINE = ["cfarena.match.log_format", "cfarena.match.law", "cfarena.sdk.local",
           "cfarena.match.resimulation", "cfarena.server.replay",
           "cfarena.server.replay.verify", "cfarena.server.replay.simulate"]
# the CLI's offline commands: they read logs (or a database) and play nothing
OFFLINE_COMMANDS = ["replay", "verify", "export"]
ONLINE = ("print(sorted(m for m in sys.modules if m.split('.')[0] == 'grpc'"
          " or m.startswith('cfarena.server.referee') or m.endswith('_pb2_grpc')))\n")


def _online_after(code: str) -> tuple[str, str]:
    """What of gRPC and the referee a fresh interpreter has loaded after `code`, and
    what `code` printed to stderr."""
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code + ONLINE],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1], out.stderr


def test_offline_tools_import_no_grpc_and_no_referee() -> None:
    online, _ = _online_after("".join(f"import {name}\n" for name in OFFLINE))
    assert online == "[]"


def test_offline_commands_import_no_grpc_and_no_referee() -> None:
    # what running each command loads: its help parses its options from the same
    # module its run calls into
    online, loaded = _online_after(
        "import contextlib\n"
        "from cfarena.server.cli import command\n"
        "cmd = command()\n"
        f"for name in {OFFLINE_COMMANDS!r}:\n"
        "    with contextlib.suppress(SystemExit):\n"
        "        cmd.main([name, '--help'], prog_name='cfarena', standalone_mode=False)\n"
        "print(*sorted(m for m in sys.modules if m.startswith('cfarena.server.cli.')),"
        " file=sys.stderr)\n")
    assert {"cfarena.server.cli.replay", "cfarena.server.cli.matches"} <= set(loaded.split())
    assert online == "[]"
