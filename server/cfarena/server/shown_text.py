"""A bot's words shown to people (the organiser's terminal, stored failure lines): every
character that is not printable, control characters and terminal escapes, line and
paragraph separators (U+2028, U+2029) and the bidirectional overrides and isolates
among them, is shown as an escape, so that a bot's text can neither drive a terminal,
start a line of its own, nor reorder what a reader sees. Spaces other than the ASCII
one (a no-break space) and invisible format characters (a zero-width joiner inside an
emoji) are escaped too: a reader sees what the bot wrote, never what it hides. Light to
import (`cfarena show` and the sandbox's failure lines both use it)."""

from __future__ import annotations


def printable(text: str, keep: str = "\t") -> str:
    """`text` with each character that is not printable (`str.isprintable`) and not in
    `keep` shown as \\xNN, \\uNNNN or \\UNNNNNNNN."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else _escaped(c) for c in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
