"""`validate` on the fixture packages (CPU stand-in): the run confirms every verdict of HAZARDS.md but one.

LearnedPositionalEmbedding copies host data to the device on every call (AG108). The stand-in catches
host syncs, not copies, so there it captures and matches eager: a missed opportunity on CPU only (on
a GPU the copy breaks the capture).
"""

from __future__ import annotations

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


@pytest.mark.parametrize("package", ["torch_lm", "paddle_lm"])
def test_fixture_verdicts_hold_at_run_time(package: str) -> None:
    framework = package.split("_")[0]
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    code, data = report(f"{package}:make_model", "--loss", f"{package}:loss_fn", "--path", str(FIXTURES))
    assert code == 0
    assert (data["framework"], data["backend"], data["package"]) == (framework, "standin", f"fixtures/{package}")
    assert table(data) == {f"{package}.{name}": row for name, row in EXPECTED.items()}
    plan = data["plan"]
    # embed, embed_proj, the two dense blocks, norm, head, and the two experts inside the MoE layer
    assert (plan["sites"], plan["runtime"]["wrapped"], plan["outcome"]) == (6, 8, "captured")
    assert plan["runtime"]["eager_calls"] == 0 and plan["runtime"]["disabled"] == []
    assert plan["runtime"]["forward_replays"] > 0 and plan["runtime"]["backward_replays"] > 0
    assert plan["bitwise"] and plan["max_rel_diff"] == {"outputs": 0.0, "grads": 0.0}
    failed = {c["class"]: c["detail"] for c in data["classes"] if c["outcome"] == "failed"}
    assert all(detail.startswith("capture failed: HostSyncDuringCapture") for detail in failed.values())
    assert "Tensor.__float__" in failed[f"{package}.block.ActivationStats"]  # float(rms), block.py:46
    assert [d["class"] for d in data["disagreements"]] == [f"{package}.embedding.LearnedPositionalEmbedding"]
