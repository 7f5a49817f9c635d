"""`bench/runtime_host.py` still measures what it says: it reaches into the runtime's records to silence every
graph's replay, so a change to those records breaks it without any other test noticing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "runtime_host.py"


@pytest.mark.parametrize("extra", [[], ["--no-fuse"]])
def test_the_host_bench_silences_every_graph_it_captured(extra: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--steps", "3", *extra], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    graphs = {m[0]: int(m[1]) for m in re.findall(r"^(per block|whole model): .*\((\d+) graphs\)$", done.stdout, re.M)}
    assert graphs.get("per block", 0) > 0 and graphs.get("whole model", 0) > 0, done.stdout
