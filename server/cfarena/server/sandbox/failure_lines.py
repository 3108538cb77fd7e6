"""The lines of a bot's output that say why it failed, and the hint for a missing path.

A runtime that dies prints more than its last line: Python ends its traceback with
the exception (the frame above it says where), Node.js prints the error near the top
of its trace and ends with its own version ("Node.js v20.20.2"), Go and Rust print
their panic, then frames and notes. `explaining_lines` picks the few lines that
explain it (pure: text in, lines out); `looks_like_missing_path` says whether they
read like a file or module that was not found, which in a sandbox usually means a
path it was not shown (`missing_path_hint`).

`failure_text` puts them together so that the bot's words cannot pass for the
arena's: every line the bot printed is quoted behind BOT_PREFIX, escaped (no line
breaks, no terminal escapes), on the arena's own line; the arena's hint is a line of
its own that starts with HINT_PREFIX, which no quoted line can (`without_hint` drops it
where the text is public).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from cfarena.server.shown_text import printable

MAX_LINES = 4  # lines quoted at most
MAX_CHARS = 200  # characters of one line quoted at most
WINDOW = 60  # a trace counts only if it ends among the last lines of the output
PLAIN_LINES = 3  # lines quoted of output that is no trace we know

BOT_PREFIX = "bot> "  # before each line of a bot's output the arena quotes
HINT_PREFIX = "hint: "  # the arena's advice: a line of its own, never a bot's

# (index of the line that names the error, the lines quoted) or None
_Found = tuple[int, list[str]] | None

# the hint as stored before it had a line of its own (rows of older versions)
_OLD_INLINE_HINT = re.compile(r"; hint: the sandbox shows only .*$")
_PY_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CARETS = re.compile(r"^[\s^~]+$")
_JS_ERROR = re.compile(r'^(?:Uncaught |Exception in thread "[^"]*" )?[\w.$]*(?:Error|Exception)\b')
_JS_FRAME = re.compile(r"^\s+at ")
_GO_PANIC = re.compile(r"^(?:panic: |fatal error: )")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[")
_RUST_PANIC = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at ")
# a log record at an informative level ("2026-12-06 21:08:26,773 INFO name: ..."):
# not what explains a failure, when other lines are there
_CHATTER = re.compile(r"^.{0,40}?\b(?:INFO|DEBUG)\b")
_MISSING = re.compile(
    r"ModuleNotFoundError|FileNotFoundError|No module named|Cannot find module|"
    r"No such file or directory|ENOENT|execvp|exec: .*not found|: not found$|"
    r"cannot open shared object file|NotFound", re.IGNORECASE)


def _python(lines: Sequence[str]) -> _Found:
    """The exception line after the last traceback frame, with that frame and its code."""
    frames = [i for i, ln in enumerate(lines) if _PY_FRAME.match(ln)]
    if not frames:
        return None
    frame = frames[-1]
    for end in range(frame + 1, len(lines)):
        if not lines[end][:1].isspace():
            code = [ln for ln in lines[frame + 1:end] if not _CARETS.match(ln)][:1]
            return end, [lines[frame], *code, lines[end]]
    return None


def _node(lines: Sequence[str]) -> _Found:
    """An error line followed by `at` frames (Node.js, also Java): it and the first
    frame that is not the runtime's own."""
    for i in range(len(lines) - 1, -1, -1):
        if not _JS_ERROR.match(lines[i]):
            continue
        after = lines[i + 1:i + 40]
        frames = [ln for ln in after if _JS_FRAME.match(ln)]
        if not frames:
            continue
        own = [ln for ln in frames if "node:" not in ln and "(internal/" not in ln]
        return i, [lines[i], *(own or frames)[:1]]
    return None


def _go(lines: Sequence[str]) -> _Found:
    """A Go panic and its first frame outside the runtime (function, then file)."""
    starts = [i for i, ln in enumerate(lines) if _GO_PANIC.match(ln)]
    if not starts:
        return None
    start = starts[-1]
    frame: list[str] = []
    goroutine = next((j for j in range(start + 1, len(lines))
                      if _GO_GOROUTINE.match(lines[j])), None)
    if goroutine is not None:
        for j in range(goroutine + 1, len(lines) - 1, 2):
            if not lines[j].startswith(("runtime.", "panic(")):
                frame = [lines[j], lines[j + 1]]
                break
    return start, [lines[start], *frame]


def _rust(lines: Sequence[str]) -> _Found:
    """A Rust panic: where (`panicked at FILE:LINE:COL:`) and its message below."""
    starts = [i for i, ln in enumerate(lines) if _RUST_PANIC.match(ln)]
    if not starts:
        return None
    start = starts[-1]
    message = lines[start + 1:start + 2] if lines[start].endswith(":") else []
    return start, [lines[start], *message]


# ties (two rules naming the same line) go to the first
_RULES: tuple[Callable[[Sequence[str]], _Found], ...] = (_python, _node, _go, _rust)


def explaining_lines(output: str, ignore: Callable[[str], bool] = lambda _line: False
                     ) -> list[str]:
    """The lines of `output` that explain how the bot failed (at most MAX_LINES, each
    cut to MAX_CHARS, stripped): the error of the last stack trace a rule recognises
    (Python, Node.js and Java, Go, Rust) with the frame that says where, if the trace
    ends among the last WINDOW lines; else the last PLAIN_LINES lines but informative
    log records (INFO, DEBUG). Lines for
    which `ignore` is true (a runtime's own log lines) are skipped unless there is
    nothing else."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ignore(ln)] or lines
    window = lines[-WINDOW:]
    best: tuple[int, list[str]] | None = None
    for rule in _RULES:
        found = rule(window)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    if best is None:
        plain = [ln for ln in window if not _CHATTER.match(ln)] or window
        best = (len(window), plain[-PLAIN_LINES:])
    picked = best[1]
    return [ln.strip()[:MAX_CHARS] for ln in picked[:MAX_LINES]]


def looks_like_missing_path(lines: Sequence[str]) -> bool:
    """Whether `lines` read like a file, module or program that was not found."""
    return any(_MISSING.search(ln) for ln in lines)


def missing_path_hint(named: Sequence[str], more: int = 0) -> str:
    """What to tell the author of a sandboxed bot that did not find a file: what its
    sandbox shows (`named`: the paths besides the system's and Python's, the first
    few of them, and `more` not listed) and how to show more."""
    listed = ", ".join(printable(p) for p in named) if named else "nothing else"
    if more:
        listed += f" and {more} more"
    return (f"{HINT_PREFIX}the sandbox shows only the system directories, Python's and "
            f"{listed}; name more with --sandbox-bind DIR (keep the bot and what it "
            "needs, node_modules or a venv, in a directory of its own, away from the "
            "database)")


def failure_text(what: str, lines: Sequence[str], hint: str | None = None) -> str:
    """The arena's one line `what` (e.g. "exited with code 1"), then the bot's `lines`,
    each escaped (`printable`) behind BOT_PREFIX and joined by " | " on that same line;
    then `hint` (which starts with HINT_PREFIX) on a line of its own. Whatever the bot
    printed, the text has no line but the first and the hint's, and no quoted line of
    the bot's starts a line."""
    text = what
    if lines:
        text += ": " + " | ".join(BOT_PREFIX + printable(ln) for ln in lines)
    return text if hint is None else f"{text}\n{hint}"


def hints(text: str) -> list[str]:
    """The arena's hint lines in `text` (a `failure_text`, or a text quoting one)."""
    return [ln for ln in text.split("\n") if ln.startswith(HINT_PREFIX)]


def without_hint(text: str) -> str:
    """`text` (a `failure_text`, or a text quoting one) without the arena's hint, for
    where it is public: the hint names the organiser's paths. Also cuts the hint of a
    text stored before the hint had a line of its own ("...; hint: the sandbox ...")."""
    kept = (_OLD_INLINE_HINT.sub("", ln) for ln in text.split("\n")
            if not ln.startswith(HINT_PREFIX))
    return "\n".join(kept)


def around(text: str, before: str = "", after: str = "") -> str:
    """`text` (a `failure_text`) with `before` and `after` around all of it but the
    hint, which stays a line of its own at the end (and so is still dropped whole by
    `without_hint`, with nothing of the arena's words after it)."""
    lines = text.split("\n")
    told = [ln for ln in lines if ln.startswith(HINT_PREFIX)]
    said = "\n".join(ln for ln in lines if not ln.startswith(HINT_PREFIX))
    return "\n".join([before + said + after, *told])
