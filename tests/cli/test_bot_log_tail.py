"""The one line of a bot's log quoted when it dies before connecting."""

from __future__ import annotations

from pathlib import Path

from cfarena.server.botproc import BotProcess
from cfarena.server.tournament.runner import _tail


def _proc_with_log(tmp_path: Path, text: str) -> BotProcess:
    log = tmp_path / "bot.log"
    log.write_text(text)
    return BotProcess("typo#0", "true", log_path=log)


def test_tail_quotes_the_bots_last_line_not_grpcs_exit_chatter(tmp_path: Path) -> None:
    proc = _proc_with_log(tmp_path, (
        "starting\n"
        "python -m cfarena.sdk: error: no such bot module: no_such_module\n"
        "E1202 20:34:01.123456   4242 fork_posix.cc:71] Other threads are currently "
        "calling into gRPC, skipping fork() handlers\n"
        "\n"
    ))
    assert _tail(proc) == ": python -m cfarena.sdk: error: no such bot module: no_such_module"


def test_tail_of_a_log_with_only_grpc_lines_or_nothing(tmp_path: Path) -> None:
    only_grpc = "W1202 20:34:01.1 1 a.cc:2] something\n"
    assert _tail(_proc_with_log(tmp_path, only_grpc)) == ": " + only_grpc.strip()
    assert _tail(_proc_with_log(tmp_path, "")) == ""
    assert _tail(BotProcess("x#0", "true")) == ""
