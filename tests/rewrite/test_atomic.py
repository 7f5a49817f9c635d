"""Atomic, race-checked replacement: permissions kept, links followed, newer files never overwritten."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from autograph_cg.rewrite import atomic


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(atomic.TEMP_SUFFIX))


def test_replace_writes_the_new_bytes_and_keeps_the_mode(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    f.chmod(0o640)
    atomic.replace(atomic.read_snapshot(f), b"new\r\n")
    assert f.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_a_file_changed_after_reading_is_not_overwritten(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    snap = atomic.read_snapshot(f)
    f.write_bytes(b"edited by someone else\n")
    with pytest.raises(atomic.FileChanged):
        atomic.replace(snap, b"new\n")
    assert f.read_bytes() == b"edited by someone else\n"
    assert _leftovers(tmp_path) == []


def test_read_only_files_are_refused_even_for_root(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    f.chmod(0o444)
    snap = atomic.read_snapshot(f)
    assert not snap.writable
    with pytest.raises(atomic.ReadOnly):
        atomic.replace(snap, b"new\n")
    assert f.read_bytes() == b"old\n"


def test_a_symlink_stays_a_link_and_its_target_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    atomic.replace(atomic.read_snapshot(link), b"new\n")
    assert link.is_symlink() and target.read_bytes() == b"new\n"


def test_a_failed_write_leaves_the_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    snap = atomic.read_snapshot(f)

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        atomic.replace(snap, b"new\n")
    assert f.read_bytes() == b"old\n"
    assert _leftovers(tmp_path) == []
