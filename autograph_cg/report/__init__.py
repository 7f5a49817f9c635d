"""Emitters: `--format` name -> function writing an analysis to a stream. The CLI reads its choices here."""

from __future__ import annotations

from typing import Any, Callable, TextIO

from autograph_cg.report import github, json_format, junit, sarif, text

Emitter = Callable[[Any, TextIO, Any], None]

FORMATS: dict[str, Emitter] = {
    "text": text.emit,
    "json": json_format.emit,
    "sarif": sarif.emit,
    "github": github.emit,
    "junit": junit.emit,
}
