"""`lines_of`: the lines Python counts (its tokenizer's breaks only), split by `str.splitlines` where that gives them."""

from __future__ import annotations

import itertools

import pytest

from autograph_cg.sources import LINE_BREAK, lines_of

PIECES = ["x", "\n", "\r", "\r\n", "\x0c", "\x0b", "\x1c", "\x85", "\u2028", " "]


def _texts():
    yield ""
    for size in range(1, 4):
        for combo in itertools.product(PIECES, repeat=size):
            yield "".join(combo)


@pytest.mark.parametrize("keepends", [False, True])
def test_lines_are_those_python_counts(keepends: bool) -> None:
    for text in _texts():
        lines = lines_of(text, keepends)
        if keepends:
            assert "".join(lines) == text, repr(text)
            assert [LINE_BREAK.sub("", line) for line in lines] == LINE_BREAK.split(text)[: len(lines)], repr(text)
        else:
            assert lines == LINE_BREAK.split(text), repr(text)


def test_a_form_feed_is_no_line_break() -> None:
    source = "a = 1\x0c\nb = 2\r\nc = 3\rd\u2028e"
    assert lines_of(source) == ["a = 1\x0c", "b = 2", "c = 3", "d\u2028e"]
    assert lines_of(source, keepends=True) == ["a = 1\x0c\n", "b = 2\r\n", "c = 3\r", "d\u2028e"]
