"""A progress bar on stderr for long runs, and nothing at all otherwise.

It shows only when the stream is a terminal, `quiet` is off, and the run has lasted `delay` seconds: a
quick lint prints no flicker, a pipe or CI log gets no control characters. Redraws are throttled so a
run over thousands of files costs a few dozen writes. The runner calls `start(total)`, `advance(n)` per
file done and `finish()`, which erases the bar so the report that follows starts on a clean line.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Callable, TextIO

from autograph_cg.report.style import is_terminal


class Progress:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        quiet: bool = False,
        label: str = "analyzing",
        delay: float = 1.0,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and is_terminal(self.stream)
        self.label = label
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.total = 0
        self.done = 0
        self._started = 0.0
        self._drawn_at: float | None = None

    def start(self, total: int) -> None:
        self.total = max(total, 0)
        self.done = 0
        self._started = self.clock()
        self._drawn_at = None

    def advance(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total) if self.total else self.done + n
        if not self.enabled:
            return
        now = self.clock()
        if now - self._started < self.delay:
            return
        if self._drawn_at is not None and now - self._drawn_at < self.interval and self.done < self.total:
            return
        self._drawn_at = now
        self.stream.write("\r" + self.render(shutil.get_terminal_size().columns) + "\x1b[K")
        self.stream.flush()

    def finish(self) -> None:
        if self._drawn_at is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn_at = None

    def render(self, columns: int) -> str:
        """One line that fits in `columns`: label, bar, count and percentage."""
        if self.total:
            counts = f" {self.done}/{self.total} files {100 * self.done // self.total:3d}%"
        else:
            counts = f" {self.done} files"
        width = max(columns - 1 - len(self.label) - len(counts) - 3, 0)
        if not self.total or width < 10:
            return (self.label + counts)[: max(columns - 1, 0)]
        filled = width * self.done // self.total
        return f"{self.label} [{'#' * filled}{'.' * (width - filled)}]{counts}"

