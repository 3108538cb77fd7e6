"""A bot's captured output: the line quoted when it dies, and the cap on what is kept."""

from __future__ import annotations

from cfarena.server.sandbox import CapturedOutput, exit_summary


def _captured(text: str, keep: int = 64 * 1024) -> CapturedOutput:
    out = CapturedOutput(keep_bytes=keep)
    out.add(text.encode())
    return out


def test_the_exit_line_quotes_the_bot_not_grpcs_exit_chatter() -> None:
    out = _captured(
        "starting\n"
        "python -m cfarena.sdk: error: no such bot module: no_such_module\n"
        "E1202 20:34:01.123456   4242 fork_posix.cc:71] Other threads are currently "
        "calling into gRPC, skipping fork() handlers\n"
        "\n"
    )
    assert exit_summary(None, 0, out) == (
        "exited with code 0: bot> python -m cfarena.sdk: error: no such bot module: no_such_module")


def test_the_exit_line_of_output_with_only_grpc_lines_or_nothing() -> None:
    only_grpc = "W1202 20:34:01.1 1 a.cc:2] something\n"
    assert exit_summary(None, 0, _captured(only_grpc)) == \
        f"exited with code 0: bot> {only_grpc.strip()}"
    assert exit_summary(None, -9, _captured("")) == "killed by SIGKILL"


def test_a_flood_keeps_its_start_and_its_end_and_counts_the_rest() -> None:
    out = CapturedOutput(keep_bytes=1000)
    out.add(b"FIRST\n")
    for _ in range(10_000):
        out.add(b"x" * 99 + b"\n")
    out.add(b"LAST WORDS\n")
    text = out.text()
    assert out.total == 6 + 10_000 * 100 + 11
    assert text.startswith("FIRST\n")
    assert text.endswith("LAST WORDS\n")
    assert len(text) < 1200
    dropped = out.total - len(out.head) - len(out.tail)
    assert f"[... {dropped} bytes not kept ...]" in text
    assert exit_summary(None, 0, out) == "exited with code 0: bot> LAST WORDS"
