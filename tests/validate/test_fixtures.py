"""`validate` on the fixture packages: the run confirms every verdict of HAZARDS.md, but one on the CPU stand-in.

LearnedPositionalEmbedding copies host data to the device on every call (AG108). The stand-in catches
host syncs, not copies, so there it captures and matches eager: a missed opportunity on CPU only. On a
GPU the copy breaks the capture, as the analyzer says.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from tests.validate.helpers import FIXTURES, report, table

EXPECTED = {
    "model.DecoderLM": ("ineligible", "failed", None),
    "embedding.TokenEmbedding": ("eligible", "captured", None),
    "embedding.LearnedPositionalEmbedding": ("ineligible", "captured", "missed opportunity"),
    "block.DecoderBlock": ("eligible", "captured", None),
    "norm.RMSNorm": ("eligible", "captured", None),
    "attention.MultiHeadAttention": ("eligible", "captured", None),
    "mlp.GatedMLP": ("eligible", "captured", None),
    "block.MoEDecoderBlock": ("ineligible", "failed", None),
    "mlp.MoEFeedForward": ("ineligible", "failed", None),
    "block.ActivationStats": ("ineligible", "failed", None),
    "heads.LMHead": ("eligible", "captured", None),
    "heads.TopPSampler": ("ineligible", "not called", None),
}


@pytest.mark.parametrize(
    ("package", "backend"),
    [("torch_lm", "standin"), ("paddle_lm", "standin"), pytest.param("torch_lm", "cuda", marks=pytest.mark.gpu)],
)
def test_fixture_verdicts_hold_at_run_time(package: str, backend: str) -> None:
    framework = package.split("_")[0]
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    if backend == "cuda" and not importlib.import_module(framework).cuda.is_available():
        pytest.skip("no CUDA device")
    args = (f"{package}:make_model", "--loss", f"{package}:loss_fn", "--path", str(FIXTURES))
    code, data = report(*args, backend=backend)
    assert code == 0
    assert (data["framework"], data["backend"], data["package"]) == (framework, backend, f"fixtures/{package}")
    expected = dict(EXPECTED)
    if backend == "cuda":
        expected["embedding.LearnedPositionalEmbedding"] = ("ineligible", "failed", None)
    assert table(data) == {f"{package}.{name}": row for name, row in expected.items()}
    plan = data["plan"]
    # embed, embed_proj, the two dense blocks, norm, head, and the two experts inside the MoE layer
    assert (plan["sites"], plan["runtime"]["wrapped"], plan["outcome"]) == (6, 8, "captured")
    assert plan["runtime"]["eager_calls"] == 0 and plan["runtime"]["disabled"] == []
    assert plan["runtime"]["forward_replays"] > 0 and plan["runtime"]["backward_replays"] > 0
    failed = {c["class"]: c["detail"] for c in data["classes"] if c["outcome"] == "failed"}
    assert all(detail.startswith("capture failed: ") for detail in failed.values())
    if backend == "standin":
        assert plan["bitwise"] and plan["max_rel_diff"] == {"outputs": 0.0, "grads": 0.0}
        assert "Tensor.__float__" in failed[f"{package}.block.ActivationStats"]  # float(rms), block.py:46
        assert [d["class"] for d in data["disagreements"]] == [f"{package}.embedding.LearnedPositionalEmbedding"]
    else:
        assert data["disagreements"] == []
