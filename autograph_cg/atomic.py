"""The one way this tool writes a file: into a temporary file beside it, then a rename over it.

A reader (or a run killed at any moment) sees the old file or the new one, never a part; at worst a stray
`.<name>.*.autograph-cg.tmp` is left beside it. Reports, caches and rewritten sources all go through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterator

TEMP_SUFFIX = ".autograph-cg.tmp"


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(
    target: Path,
    text: bool = False,
    mode: int | None = None,
    before_replace: Callable[[str], None] | None = None,
    durable: bool = True,
) -> Iterator[IO]:
    """Yield a file to write; when the block succeeds it is synced, given `mode`, checked and renamed over `target`.

    `before_replace(temp_path)` may raise to keep the old file (e.g. when it changed meanwhile). OSError from
    creating the temporary file propagates unchanged. `durable=False` skips the syncs: for a file whose loss in a
    power cut costs nothing but time (a cache, read back as a miss when damaged), they cost more than the write.
    """
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
    try:
        with (os.fdopen(fd, "w", encoding="utf-8", newline="\n") if text else os.fdopen(fd, "wb")) as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(target.parent)
