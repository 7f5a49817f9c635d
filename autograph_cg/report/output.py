"""Where a report goes: stdout, or a file that appears whole or not at all.

Every `--output FILE` and every file the tool writes for the user (HTML report, baseline) goes through
`open_output`: the text is streamed into a temporary file beside the target and renamed over it at the
end, so a failure half-way (an unwritable directory, a full disk, an exception in an emitter) never
leaves a truncated report that CI could mistake for a clean one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import Iterator, TextIO

from autograph_cg.atomic import TEMP_SUFFIX, atomic_file


class OutputError(Exception):
    """The report could not be written; the message is one line for stderr (exit 2)."""


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def _file_mode(target: Path) -> int:
    """Keep an existing file's mode; a new file gets what `open()` would give it under the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str] | None, stdout: TextIO | None = None) -> Iterator[TextIO]:
    """Yield a text stream for `path` (None or "-": stdout); the file is only replaced when the block succeeds."""
    if path is None or str(path) == "-":
        yield stdout if stdout is not None else sys.stdout
        return
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {target}: it is a directory")
    try:
        with atomic_file(target, text=True, mode=_file_mode(target)) as stream:
            yield stream
    except OSError as exc:
        if exc.filename not in (None, str(target)) and not str(exc.filename).endswith(TEMP_SUFFIX):
            raise  # about another file (a source the emitter read), not about this output
        raise OutputError(f"cannot write {target}: {_reason(exc)}") from None
