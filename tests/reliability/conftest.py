"""Hypothesis example counts, printed at the end of the run so the figures can be quoted."""

from __future__ import annotations

import pytest

from tests.reliability.generate import EXAMPLES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if EXAMPLES:
        terminalreporter.section("hypothesis examples run")
        for name, count in sorted(EXAMPLES.items()):
            terminalreporter.write_line(f"{name}: {count}")
