"""The zoo's driver (`bench/zoo.py`) on the sample CI can build: the bundled fixture models, on the CPU
stand-in, each validated in a process of its own; the H200 runs the whole zoo, and paddlenlp's part runs on CPU
Paddle (docs/performance.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_the_zoo_driver_validates_a_model_and_finds_no_runtime_bug(tmp_path: Path, framework: str) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    out = tmp_path / "zoo.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "zoo.py"), "run", "--only", f"fixtures/{framework}_lm", "--steps", "2",
         "--jobs", "1", "--json", str(out)],
        capture_output=True, text=True, env={**os.environ, "AUTOGRAPH_CG_BACKEND": "standin"}, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("1 models, 0 without a report, 0 runtime bugs")
    (result,) = json.loads(out.read_text())
    classes = {c["class"]: c for c in result["report"]["classes"]}
    assert classes[f"{framework}_lm.block.DecoderBlock"]["outcome"] == "captured"
    assert all(c["disagreement"] != "runtime bug" for c in classes.values())
