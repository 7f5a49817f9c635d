"""Internal errors: a bug of the analyzer met on one function, class or file is recorded, never raised.

The analysis of everything else goes on; the affected classes end `unknown` with the reason, the error is
reported like an unreadable file (one line), and the run exits 2 so that CI notices.
"""

from __future__ import annotations

import os
import traceback

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The reason code of a verdict that an internal error left `unknown` (not a rule: it is never selected away).
INTERNAL = "internal-error"


def describe(exc: BaseException) -> str:
    """`KeyError: 'pad' (rules/host_sync.py:103)`: the exception and the analyzer line that raised it."""
    text = str(exc)
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith(_PACKAGE_ROOT):
            where = f" ({os.path.relpath(frame.filename, _PACKAGE_ROOT)}:{frame.lineno})"
            break
    return f"{type(exc).__name__}{': ' + text if text else ''}{where}"


def message(where: str, detail: str) -> str:
    """The one line shown for an internal error in `where` (a function, class or file)."""
    return f"internal error in {where}: {detail}" if where else f"internal error: {detail}"
