"""Race-checked atomic replacement of a source file: a reader only ever sees the old bytes or the new ones.

The new text goes to a temporary file in the same directory (same file system, so the rename is atomic),
is flushed and fsynced, gets the old file's permission bits (and owner where allowed), and is renamed over
the original only if the original still holds the bytes that were read: a file edited since it was read is
never overwritten. A process killed at any moment leaves the original or the new file, and at worst a stray
`.<name>.*.autograph-cg.tmp` beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autograph_cg.atomic import TEMP_SUFFIX, atomic_file

__all__ = ["TEMP_SUFFIX", "FileChanged", "ReadOnly", "Snapshot", "read_snapshot", "replace"]


class FileChanged(Exception):
    """The file no longer holds what was read; it is left as it is."""


class ReadOnly(Exception):
    """The file's permissions forbid writing it (checked on the mode bits, so that it holds for root too)."""


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What was read: the real path (symlinks followed), the bytes, their hash and the file's status."""

    path: Path
    data: bytes
    digest: bytes
    mode: int
    uid: int
    gid: int

    @property
    def writable(self) -> bool:
        return bool(self.mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(self.path, os.W_OK)


def read_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read a file once; raises OSError when it cannot be read."""
    real = Path(os.path.realpath(path))
    with open(real, "rb") as f:
        st = os.fstat(f.fileno())
        data = f.read()
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(f"not a regular file: {path}")
    return Snapshot(real, data, _digest(data), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def replace(snapshot: Snapshot, new: bytes) -> None:
    """Write `new` in place of the snapshot's file; raises ReadOnly, FileChanged or OSError and then changes nothing."""
    if not snapshot.writable:
        raise ReadOnly(f"read-only: {snapshot.path}")
    target = snapshot.path

    def unchanged(tmp: str) -> None:
        if hasattr(os, "chown") and (snapshot.uid, snapshot.gid) != (os.getuid(), os.getgid()):
            with contextlib.suppress(OSError):
                os.chown(tmp, snapshot.uid, snapshot.gid)
        with open(target, "rb") as f:
            if _digest(f.read()) != snapshot.digest:
                raise FileChanged(f"changed since it was read: {target}")

    with atomic_file(target, mode=snapshot.mode, before_replace=unchanged) as f:
        f.write(new)
