"""The zoo's driver (`bench/zoo.py`) on the sample CI can build: the bundled fixture models, on the CPU
stand-in, each validated in a process of its own; the H200 runs the whole zoo, and paddlenlp's part runs on CPU
Paddle (docs/performance.md)."""

from __future__ import annotations

import importlib
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


@pytest.mark.gpu
def test_the_zoo_speed_bench_times_the_fixture_model_wrapped_as_the_plan_wraps_it(tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None or not importlib.import_module("torch").cuda.is_available():
        pytest.skip("needs a CUDA device")
    out = tmp_path / "speed.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "zoo_speed.py"), "--only", "fixtures/torch_lm", "--steps", "12",
         "--warmup", "6", "--jobs", "1", "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT,
    )
    (row,) = json.loads(out.read_text())
    assert "error" not in row, row
    assert row["wrappers"] >= 1 and row["replays"] > 0 and row["eager_calls"] == 0
    assert all(row[f"{phase}_{variant}_ms"] > 0 for phase in ("train", "infer") for variant in ("eager", "wrapped"))
    assert proc.stdout.strip().splitlines()[-1].startswith("1 models, 0 not run")
    assert proc.returncode == (1 if row["train_wrapped_ms"] > row["train_eager_ms"] else 0)
