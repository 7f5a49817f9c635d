"""Colour for text output: on a terminal only, and never with `--no-color` or `NO_COLOR` set.

`NO_COLOR` follows no-color.org: any non-empty value turns colour off. `TERM=dumb` does too. Roles name
what is shown (a path, a rule code, a severity, a verdict), so the text emitter never spells escape codes.
"""

from __future__ import annotations

import os
from typing import Mapping, TextIO

_SGR = {
    "path": "1",
    "position": "2",
    "code": "1;35",
    "error": "1;31",
    "warning": "1;33",
    "info": "1;36",
    "eligible": "32",
    "ineligible": "31",
    "unknown": "33",
    "skipped": "2",
    "bold": "1",
    "dim": "2",
}


def use_color(stream: TextIO, no_color: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if no_color or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class Style:
    """`style(text, role)` wraps text in the role's colour when enabled, else returns it unchanged."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO, no_color: bool = False) -> "Style":
        return cls(use_color(stream, no_color))

    def __call__(self, text: str, role: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_SGR[role]}m{text}\x1b[0m"
