"""What the analyzer reports: one `Finding` per hazard, positioned for editors and SARIF.

Positions are 1-based lines and 1-based character columns; `end_col` is exclusive (the column just after the
last character), as in SARIF. These types are the contract between the analyzer, the rewriter and the reports.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    """`error` blocks capture; `warning` is wrong-but-capturable or unknown; `info` is advice."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Finding:
    path: str
    span: Span
    code: str
    message: str
    function: str  # where it sits: "Class.method" or "function", "" at module level
    source_line: str = ""  # the stripped text of the first line, for baselines and reports
    condition: str = ""  # it runs only when this holds, which is off by default (the class is then conditional)
    guard: tuple[tuple[str, str], ...] = ()  # tests of the function's arguments that keep it from running
    # the test of the refresh it writes the layer's state in (`analysis/refresh.py`): no hazard, the runtime
    # recaptures after a refresh
    refresh: str = ""

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def col(self) -> int:
        return self.span.col

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.span.line, self.span.col, self.code)


@dataclass(frozen=True)
class SourceError:
    """A file (or path argument) that could not be analyzed, and why, in one line.

    `internal`: a bug of the analyzer, not of the input (the rest of the file may still be analyzed)."""

    path: str
    message: str
    internal: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
