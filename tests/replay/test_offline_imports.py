"""Offline tools (game logs, replay, verification, the match law) load no gRPC and no referee."""

from __future__ import annotations

import subprocess
import sys

OFFLINE = ["cfarena.server.gamelog", "cfarena.server.law", "cfarena.server.law_replay",
           "cfarena.server.replay", "cfarena.server.replay.verify",
           "cfarena.server.replay.simulate"]


def test_offline_tools_import_no_grpc_and_no_referee() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in OFFLINE)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] == 'grpc'"
          " or m.startswith('cfarena.server.referee') or m.endswith('_pb2_grpc')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout
