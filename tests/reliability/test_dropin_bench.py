"""The drop-in check of bench/dropin.py on a small library per framework (tests/reliability/dropin_sample.py):
written to a temporary folder, rewritten by `autograph-cg rewrite`, and compared part by part, each side in a
process of its own. And the check catches a wrapper that keeps the layer as a child (the design the runtime
had before): the library's tie by parameter name then fails in the rewritten copy, as BERT's did."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import dropin_sample as sample

dropin = sample.dropin

pytestmark = pytest.mark.slow


def _rewritten(tmp_path: Path, framework: str) -> tuple[Path, Path]:
    original = sample.write(tmp_path / "original", framework)
    meta = dropin.rewrite_copy(original, tmp_path / "rewritten", [], None)
    assert meta["rewrite"]["files_changed"] == 1 and meta["rewrite"]["files_skipped"] == 0
    return original.parent, tmp_path / "rewritten"


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_the_rewritten_sample_library_is_a_drop_in(tmp_path: Path, framework: str) -> None:
    pytest.importorskip(framework)
    original, rewritten = _rewritten(tmp_path, framework)
    assert "CUDAGraphedLayer(Block(cfg))" in (rewritten / sample.PACKAGE[framework] / "modeling.py").read_text()
    results = dropin.check(f"tests.reliability.dropin_sample:{framework}_suite", rewritten, [str(original)],
                           tmp_path / "scratch")
    assert results["origin"]["rewritten"]["origin"].startswith(str(rewritten))
    (row,) = results["models"].values()
    assert row["diffs"] == {}
    assert row["errors"] == {} and row["not_run"] == []  # every part ran on both sides, resizing and checkpointing too
    runtime = row["runtime"]
    # the blocks run back to back: one run captured from their warmup serves them (its replays count here)
    assert runtime["wrapped"] >= 3 and runtime["captures"] >= 1 and runtime["forward_replays"] > 0
    assert runtime["fused_calls"] > 0 and runtime["backward_replays"] > 0 and runtime["fallbacks"] == {}
    assert row["shared"] == (1 if framework == "torch" else 0)  # the head tied to the embedding by name


def test_a_wrapper_that_keeps_the_layer_as_a_child_is_caught(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    original, rewritten = _rewritten(tmp_path, "torch")
    modeling = rewritten / sample.PACKAGE["torch"] / "modeling.py"
    child_wrapper = (
        "class CUDAGraphedLayer(torch.nn.Module):\n"
        "    def __init__(self, layer):\n"
        "        super().__init__()\n"
        "        self.layer = layer\n\n"
        "    def forward(self, *args, **kwargs):\n"
        "        return self.layer(*args, **kwargs)\n"
    )
    text = modeling.read_text()
    assert "from autograph_cg.runtime import CUDAGraphedLayer  # autograph-cg: added\n" in text
    modeling.write_text(text.replace("from autograph_cg.runtime import CUDAGraphedLayer  # autograph-cg: added\n",
                                     child_wrapper))
    results = dropin.check("tests.reliability.dropin_sample:torch_suite", rewritten, [str(original)], tmp_path / "scratch")
    (row,) = results["models"].values()
    (what,) = row["diffs"]["construct"]
    assert "original: ok; rewritten: KeyError: 'embeddings.word.weight'" in what
