"""A bot's words shown to people (`cfarena.server.shown_text.printable`): nothing that
could drive a terminal, break a line or reorder it gets through as itself."""

from __future__ import annotations

import pytest

from cfarena.server.shown_text import printable


@pytest.mark.parametrize(("text", "shown"), [
    ("plain words, ünïcode and 漢字 🐔", "plain words, ünïcode and 漢字 🐔"),
    ("tab\tkept", "tab\tkept"),
    ("\x1b[2Jclear", "\\x1b[2Jclear"),  # a terminal escape
    ("a\rb\nc\x85d", "a\\x0db\\x0ac\\x85d"),  # carriage return, line feed, NEL
    ("one\u2028two\u2029three", "one\\u2028two\\u2029three"),  # line/paragraph separators
    ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override
    ("\u2066isolated\u2069", "\\u2066isolated\\u2069"),  # left-to-right isolate
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("\U000e0001tag", "\\U000e0001tag"),  # a language tag (format, invisible)
])
def test_what_is_shown_of_a_bots_words(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_keep_lets_chosen_characters_through() -> None:
    assert printable("line\nnext\tcol\x07", keep="\n\t") == "line\nnext\tcol\\x07"
    assert printable("a\tb", keep="") == "a\\x09b"
