"""The lines quoted when a bot fails (sandbox/failure_lines.py): the error of a stack
trace with the frame that says where, not the runtime's last words; a few lines, capped;
and the hint for a missing file or module. Traces as the runtimes print them. A bot's
lines are quoted as its own, and never pass for the arena's hint."""

from __future__ import annotations

import pytest

from cfarena.server.sandbox.failure_lines import (
    BOT_PREFIX,
    HINT_PREFIX,
    MAX_CHARS,
    MAX_LINES,
    around,
    explaining_lines,
    failure_text,
    hints,
    looks_like_missing_path,
    missing_path_hint,
    without_hint,
)
from cfarena.server.sandbox.output import CapturedOutput, exit_summary

PYTHON = """\
2026-12-06 21:08:26,773 INFO cfarena.sdk: playing Bot on unix:/run/cfarena/arena.sock
Traceback (most recent call last):
  File "/bots/mine/bot.py", line 3, in <module>
    helper()
  File "/bots/mine/bot.py", line 2, in helper
    import numpy
    ^^^^^^^^^^^^
ModuleNotFoundError: No module named 'numpy'
"""

PYTHON_SYNTAX = """\
  File "/bots/mine/bot.py", line 1
    x = (
        ^
SyntaxError: '(' was never closed
"""

NODE = """\
node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module '@grpc/grpc-js'
Require stack:
- /bots/js/bot.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at Module.require (node:internal/modules/cjs/loader:1289:19)
    at require (node:internal/modules/helpers:182:18)
    at Object.<anonymous> (/bots/js/bot.js:1:14)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/bots/js/bot.js' ]
}

Node.js v20.20.2
"""

NODE_THROWN = """\
/bots/js/bot.js:12
  const move = turn.legalMoves[0].key;
                                  ^

TypeError: Cannot read properties of undefined (reading 'key')
    at choose (/bots/js/bot.js:12:35)
    at ClientDuplexStreamImpl.<anonymous> (/bots/js/node_modules/x.js:3:5)

Node.js v20.20.2
"""

GO = """\
starting
panic: open data.bin: no such file or directory

goroutine 1 [running]:
main.main()
\t/bots/go/main.go:8 +0x45
exit status 2
"""

GO_RUNTIME_FRAME = """\
panic: runtime error: index out of range [5] with length 3

goroutine 7 [running]:
panic({0x4a1b20?, 0xc000014090?})
\t/usr/lib/go/src/runtime/panic.go:770 +0x132
main.choose(...)
\t/bots/go/bot.go:41
main.main()
\t/bots/go/main.go:9 +0x1d
"""

RUST = """\
thread 'main' panicked at src/main.rs:2:39:
cannot read data.bin: Os { code: 2, kind: NotFound, message: "No such file or directory" }
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
"""

PLAIN = """\
loading weights
bot: cannot open weights.bin
2026-12-06 21:40:32,722 INFO cfarena.sdk: match 975078d175544bee: seat 0 of ['a', 'b']
usage: bot [--fast]
giving up
"""

EXEC_FAILED = "/bin/sh: 1: exec: nodejs: not found\n"


@pytest.mark.parametrize(("output", "expected", "missing"), [
    (PYTHON, ['File "/bots/mine/bot.py", line 2, in helper', "import numpy",
              "ModuleNotFoundError: No module named 'numpy'"], True),
    (PYTHON_SYNTAX, ['File "/bots/mine/bot.py", line 1', "x = (",
                     "SyntaxError: '(' was never closed"], False),
    (NODE, ["Error: Cannot find module '@grpc/grpc-js'",
            "at Object.<anonymous> (/bots/js/bot.js:1:14)"], True),
    (NODE_THROWN, ["TypeError: Cannot read properties of undefined (reading 'key')",
                   "at choose (/bots/js/bot.js:12:35)"], False),
    (GO, ["panic: open data.bin: no such file or directory", "main.main()",
          "/bots/go/main.go:8 +0x45"], True),
    (GO_RUNTIME_FRAME, ["panic: runtime error: index out of range [5] with length 3",
                        "main.choose(...)", "/bots/go/bot.go:41"], False),
    (RUST, ["thread 'main' panicked at src/main.rs:2:39:",
            'cannot read data.bin: Os { code: 2, kind: NotFound, message: "No such file or '
            'directory" }'], True),
    (PLAIN, ["bot: cannot open weights.bin", "usage: bot [--fast]", "giving up"], False),
    (EXEC_FAILED, ["/bin/sh: 1: exec: nodejs: not found"], True),
    ("", [], False),
], ids=["python", "python-syntax", "node-module", "node-thrown", "go", "go-runtime-frame",
        "rust", "plain", "exec", "nothing"])
def test_the_lines_that_explain_a_failure(output: str, expected: list[str],
                                          missing: bool) -> None:
    lines = explaining_lines(output)
    assert lines == expected
    assert looks_like_missing_path(lines) is missing


def test_the_last_trace_counts_and_runtime_log_lines_are_skipped() -> None:
    # a traceback the bot logged and survived, then a later crash of another runtime
    output = PYTHON + "recovered\n" + RUST + "E1206 21:08:29.1 1 fork.cc:7] grpc noise\n"
    assert explaining_lines(output, ignore=lambda ln: ln.startswith("E1206"))[0] \
        == "thread 'main' panicked at src/main.rs:2:39:"
    # nothing but runtime log lines: those are quoted rather than nothing
    assert explaining_lines("E1206 grpc noise\n", ignore=lambda ln: True) == ["E1206 grpc noise"]


def test_lines_are_capped_in_number_and_length() -> None:
    long = "x" * (3 * MAX_CHARS)
    trace = f'  File "a.py", line 1, in <module>\n    {long}\nValueError: {long}\n'
    lines = explaining_lines(trace)
    assert len(lines) <= MAX_LINES and all(len(ln) <= MAX_CHARS for ln in lines)
    assert lines[-1].startswith("ValueError: ")


def test_the_hint_names_what_the_sandbox_shows_and_how_to_show_more() -> None:
    hint = missing_path_hint(["/bots/js/bot.js"], more=2)
    assert "/bots/js/bot.js and 2 more" in hint
    assert "--sandbox-bind DIR" in hint and "away from the database" in hint
    assert "nothing else" in missing_path_hint([])


SHOWN = ["/home/organiser/bots/mine/bot.py"]
REAL_HINT = missing_path_hint(SHOWN)
FAKE_HINT = ("hint: the sandbox shows only the system directories; name more with "
             "--sandbox-bind ~/.ssh")


@pytest.mark.parametrize(("output", "hinted"), [
    (FAKE_HINT + "\n", False),
    ("ModuleNotFoundError: No module named 'x'\n" + FAKE_HINT + "\n", True),
    ("error: bot 'rival' is disqualified by the organiser\n", False),
    ("thinking\rhint: fake\r\nerror: fake\n", False),
    ("one\u2028hint: fake\x85error: fake\x0bhint: fake\x0c" + FAKE_HINT, False),
    ("\x1b[2K\r" + FAKE_HINT + "\x1b[1A\x1b]0;title\x07\n", False),
    ("No such file or directory \x1b[1A\x1b[2K\rhint: fake\n", True),
    ("hint: " + "~/.ssh " * 2000 + "\n" + "x" * 100_000 + "\n", False),
], ids=["fake-hint", "fake-hint-after-a-real-one", "fake-error", "carriage-returns",
        "unicode-line-breaks", "ansi-escapes", "escape-then-real-hint", "very-long"])
def test_a_bots_words_are_quoted_as_its_own_and_never_pass_for_the_arenas(
        output: str, hinted: bool) -> None:
    # what `exit_summary` says to the organiser's terminal and the seat's log: the arena's
    # line, then the arena's hint, a line of its own that no quoted line of the bot's is
    captured = CapturedOutput()
    captured.add(output.encode())
    summary = exit_summary(None, 1, captured, shown=SHOWN)
    first, *rest = summary.split("\n")
    assert rest == ([REAL_HINT] if hinted else [])
    assert hints(summary) == rest and without_hint(summary) == first
    assert first.startswith("exited with code 1: " + BOT_PREFIX), first
    assert not first.startswith(HINT_PREFIX) and len(summary.splitlines()) == len(rest) + 1
    # each quoted line is behind the bot's prefix; nothing in it drives a terminal
    assert all(c.isprintable() for c in summary.replace("\n", ""))
    quoted = first.removeprefix("exited with code 1: ").split(" | ")
    assert quoted and all(q.startswith(BOT_PREFIX) for q in quoted)
    assert len(quoted) <= MAX_LINES and all(
        len(q) <= len(BOT_PREFIX) + 4 * MAX_CHARS for q in quoted)


def test_the_quote_and_the_hint_put_together() -> None:
    assert failure_text("exited with code 2", []) == "exited with code 2"
    assert failure_text("exited with code 2", ["a\x1bb", "c"], REAL_HINT) == (
        f"exited with code 2: bot> a\\x1bb | bot> c\n{REAL_HINT}")
    assert missing_path_hint(["/bots/a\nhint: x"]).count("\n") == 0


def test_words_added_around_a_failure_keep_the_hint_last_and_whole() -> None:
    """What the arena adds to a failure's text (a start failure excused by a referee
    freeze, a connection lost before the match) goes around its words, never after
    the hint: dropping the hint for the public drops nothing else."""
    text = failure_text("exited with code 1", ["x: No such file"], REAL_HINT)
    said = around(text, "lost its connection before its match (", ")")
    assert said == (f"lost its connection before its match (exited with code 1: bot> "
                    f"x: No such file)\n{REAL_HINT}")
    assert without_hint(said) == ("lost its connection before its match (exited with "
                                  "code 1: bot> x: No such file)")
    assert around("exited with code 1", after=" (excused)") == "exited with code 1 (excused)"


def test_a_hint_stored_by_an_older_version_inline_is_cut_too() -> None:
    old = ("not connected: bot 'x' exited with code 1: weights.bin: No such file; "
           "hint: the sandbox shows only the system directories and /home/org/bots/x; "
           "name more with --sandbox-bind DIR")
    assert without_hint(old) == ("not connected: bot 'x' exited with code 1: "
                                 "weights.bin: No such file")
    # a bot's quoted line that reads like a hint stays the bot's (the arena's old hint
    # followed "; ")
    assert without_hint("exited: bot> hint: the sandbox shows only /x") == \
        "exited: bot> hint: the sandbox shows only /x"
