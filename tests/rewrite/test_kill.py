"""A rewrite killed with SIGKILL at any moment leaves every file byte-equal to its old or its new version."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograph_cg.rewrite import rewrite_source
from autograph_cg.rewrite.atomic import TEMP_SUFFIX

from .sites import sites_for

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("kill_driver.py")
N_FILES = 24


def _source(i: int) -> bytes:
    text = f"import paddle.nn as nn\n\n\nclass Net{i}(nn.Layer):\n    def __init__(self):\n" + "".join(
        f"        self.m{j} = MLP({j})  # {i}.{j}\n" for j in range(i % 4 + 1)
    )
    return (text.replace("\n", "\r\n") if i % 3 == 0 else text).encode()


def _kill_when(directory: Path, new: dict[str, bytes], replaced: int, temp_present: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), str(directory), "0.05"],
        stdout=subprocess.PIPE,
        env=env,
        cwd=REPO,
        start_new_session=True,  # its own process group: the kill reaches the pool's workers too
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        while proc.poll() is None:
            done = sum((directory / n).read_bytes() == data for n, data in new.items())
            temps = any(p.name.endswith(TEMP_SUFFIX) for p in directory.iterdir())
            if done >= replaced and (temps or not temp_present):
                break
            time.sleep(0.002)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed at this point"


@pytest.mark.slow
@pytest.mark.parametrize(("replaced", "temp_present"), [(0, False), (0, True), (1, True), (7, True), (15, False), (N_FILES - 3, True)])
def test_sigkill_leaves_each_file_old_or_new(tmp_path: Path, replaced: int, temp_present: bool) -> None:
    old = {f"m{i:02d}.py": _source(i) for i in range(N_FILES)}
    new = {n: rewrite_source(d, sites_for(d, {"MLP"})).new for n, d in old.items()}
    assert all(new[n] != old[n] for n in old)
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)

    _kill_when(tmp_path, new, replaced, temp_present)

    after = {n: (tmp_path / n).read_bytes() for n in old}
    assert all(after[n] in (old[n], new[n]) for n in old)
    assert sum(after[n] == new[n] for n in old) >= replaced
    strays = [p.name for p in tmp_path.iterdir() if p.name not in old]
    assert all(s.startswith(".m") and s.endswith(TEMP_SUFFIX) for s in strays)
    assert len(strays) <= (os.cpu_count() or 1)  # at most one temporary file per worker
