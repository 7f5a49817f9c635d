"""Where each layer of one build was constructed: the source positions of the calls running at that moment.

The plan names a site by where its constructor call is written (`stages.append((name, nn.Sequential(*blocks)))`
in a builder function, `self.conv = create_conv2d(...)` through a factory); a run knows a layer by where it
sits in the model. While a model is built, every layer's base `__init__` notes the position each frame on the
stack is executing, so a layer can be matched to the site whose call was running when it was made, wherever
that call is written.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any, Iterator

from autograph_cg.findings import Span

Position = tuple[str, int, "int | None"]  # file as the code names it, line, 0-based byte column (None on 3.10)
_LAYER_BASES = (("torch.nn", "Module"), ("paddle.nn", "Layer"))  # where every layer's construction passes


class Births:
    """The positions on the stack when each layer of a build was constructed."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[Any, tuple[Position, ...]]] = {}  # id -> (the layer, kept alive, its positions)
        self._positions: dict[CodeType, list] = {}

    def of(self, layer: Any) -> tuple[Position, ...] | None:
        """None when `layer` was not constructed while recording (a deep copy, an object made before)."""
        entry = self._made.get(id(layer))
        return entry[1] if entry is not None and entry[0] is layer else None

    def note(self, layer: Any, frame: FrameType | None) -> None:
        found: list[Position] = []
        while frame is not None:
            code = frame.f_code
            if not code.co_filename.startswith("<"):
                found.append((code.co_filename, *self._where(frame, code)))
            frame = frame.f_back
        self._made[id(layer)] = (layer, tuple(found))

    def _where(self, frame: FrameType, code: CodeType) -> tuple[int, int | None]:
        if not hasattr(code, "co_positions"):  # Python 3.10: the line only
            return frame.f_lineno, None
        table = self._positions.get(code)
        if table is None:
            table = self._positions[code] = list(code.co_positions())
        index = frame.f_lasti // 2  # one entry per 2-byte code unit
        line, _, col, _ = table[index] if 0 <= index < len(table) else (None, None, None, None)
        return (line or frame.f_lineno), col


@contextmanager
def recording() -> Iterator[Births]:
    """Note the construction of every layer of the frameworks already imported, until the block ends."""
    births = Births()
    patched: list[tuple[type, Any]] = []
    for module_name, class_name in _LAYER_BASES:
        base = getattr(sys.modules.get(module_name), class_name, None)
        if not isinstance(base, type) or "__init__" not in vars(base):
            continue
        original = vars(base)["__init__"]

        @functools.wraps(original)
        def init(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> None:
            births.note(self, sys._getframe(1))
            __original(self, *args, **kwargs)

        patched.append((base, original))
        base.__init__ = init  # type: ignore[misc]
    try:
        yield births
    finally:
        for base, original in patched:
            base.__init__ = original  # type: ignore[misc]


def inside(span: Span, position: Position) -> bool:
    """Whether a call running at `position` is the call written at `span` or one inside it (its arguments)."""
    file, line, col = position
    if col is None:
        return span.line <= line <= span.end_line
    text = linecache.getline(file, line)
    column = col + 1 if text.isascii() else len(text.encode("utf-8")[:col].decode("utf-8", errors="replace")) + 1
    return (span.line, span.col) <= (line, column) <= (span.end_line, span.end_col)


@functools.lru_cache(maxsize=4096)
def real(path: str) -> str:
    """One name per file, as the analyzer's paths and the code objects' file names may differ by links."""
    return os.path.realpath(path)
