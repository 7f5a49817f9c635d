"""Emitters: `--format` name -> function writing an analysis to a stream. The CLI reads its choices here.

Each format's module is imported when its emitter is asked for: the text report of a pre-commit run does not pay
for JUnit's XML library (15-20 ms of a run that has a second in all).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterator, Mapping, TextIO

Emitter = Callable[[Any, TextIO, Any], None]

#: `--format` name -> the module of `autograph_cg.report` whose `emit` writes it
_MODULES = {"text": "text", "json": "json_format", "sarif": "sarif", "github": "github", "junit": "junit"}


class _Emitters(Mapping[str, Emitter]):
    def __getitem__(self, name: str) -> Emitter:
        return importlib.import_module(f"{__name__}.{_MODULES[name]}").emit  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Emitter] = _Emitters()
