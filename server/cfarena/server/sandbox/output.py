"""A bot's captured output (first and last bytes kept) and the one line that says how it ended."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field


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

    def last_line(self) -> str:
        """The last line of output that is not a gRPC/absl runtime log line."""
        lines = [ln for ln in self.text().splitlines() if ln.strip()]
        own = [ln for ln in lines if not _is_runtime_log(ln)]
        return printable((own or lines or [""])[-1][:200])


def printable(text: str) -> str:
    """`text` with control characters (terminal escapes among them) shown as \\xNN:
    a bot's words are quoted to the organiser's terminal and stored."""
    return "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in text)


def _is_runtime_log(line: str) -> bool:
    head = line[:16]
    return (len(head) > 5 and head[0] in "IWEF" and head[1:5].isdigit() and head[5] == " ") \
        or line.startswith("WARNING: All log messages before absl")


def exit_summary(breach: str | None, code: int | None, output: CapturedOutput) -> str:
    """"exited with code 3: <last line>" / "killed by SIGKILL" / the breach."""
    if breach:
        return breach
    if code is None:
        return "still running"
    what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    last = output.last_line()
    return f"{what}: {last}" if last else what
