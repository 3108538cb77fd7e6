"""A bot's captured output (first and last bytes kept) and the one line that says how it ended."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass, field

from cfarena.server.sandbox.failure_lines import (
    explaining_lines,
    failure_text,
    looks_like_missing_path,
    missing_path_hint,
)

HINT_PATHS = 4  # paths a missing-path hint names at most


@dataclass
class CapturedOutput:
    """A bot's stdout+stderr: the first and last bytes kept, the rest counted."""

    keep_bytes: int = 64 * 1024
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes * 3 // 4 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            over = len(self.tail) - self.keep_bytes // 4
            if over > 0:
                del self.tail[:over]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {dropped} bytes not kept ...]\n" if dropped > 0 else ""
        return (bytes(self.head).decode(errors="replace") + middle
                + bytes(self.tail).decode(errors="replace"))


def _is_runtime_log(line: str) -> bool:
    head = line[:16]
    return (len(head) > 5 and head[0] in "IWEF" and head[1:5].isdigit() and head[5] == " ") \
        or line.startswith("WARNING: All log messages before absl")


def exit_summary(breach: str | None, code: int | None, output: CapturedOutput, *,
                 when: str = "", shown: Sequence[str] | None = None) -> str:
    """One line: "exited with code 3<when>: bot> <the lines that explain it>" (quoted by
    `failure_lines.failure_text`, picked by `failure_lines.explaining_lines`; after code 0
    only the last line) / "killed by SIGKILL<when>" / the breach.
    `shown`: what the bot's sandbox showed besides the system's and Python's paths (None:
    no sandbox); when the lines read like a missing file or module, a second line, the
    hint, names them and `--sandbox-bind`."""
    if breach:
        return breach
    if code is None:
        return "still running"
    what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    lines = explaining_lines(output.text(), _is_runtime_log)
    if code == 0:
        lines = lines[-1:]  # it ended as it meant to: its last words
    hint = None
    if shown is not None and looks_like_missing_path(lines):
        named = shown[:HINT_PATHS]
        hint = missing_path_hint(named, len(shown) - len(named))
    return failure_text(what + when, lines, hint)
