"""Shared set-up for the report tests: a hand-made analysis of `fixtures/paddle_lm`, and Chromium.

The hand-made analysis uses the fixture's real files and planted hazards (HAZARDS.md), so source lines
resolve; it lets the emitters be tested on exact, known input independently of the analyzer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograph_cg.analysis.plan import Note, Plan, TreeNode, WrapSite
from autograph_cg.analysis.verdicts import Reason, Status, Verdict
from autograph_cg.findings import Finding, SourceError, Span

from .chromium import ensure_chromium

REPO = Path(__file__).resolve().parents[2]
PKG = "fixtures/paddle_lm/"


@dataclass
class HandMade:
    """The shape of `autograph_cg.api.analyze`'s result that the emitters read."""

    findings: list[Finding]
    errors: list[SourceError] = field(default_factory=list)
    plan: Plan = field(default_factory=lambda: Plan((), {}, ()))
    files: list[str] = field(default_factory=list)


def finding(file: str, line: int, col: int, end_col: int, code: str, message: str, function: str, text: str) -> Finding:
    return Finding(PKG + file, Span(line, col, line, end_col), code, message, function, text)


def hand_made() -> HandMade:
    findings = [
        finding("ops.py", 31, 19, 41, "AG101", "`.item()` copies a device value to the host", "lengths_to_mask",
                "max_len = lengths.max().item()"),
        finding("heads.py", 29, 19, 60, "AG201", "`nonzero`: output shape depends on the data", "TopPSampler.forward",
                "reached = paddle.nonzero(cumulative >= self.top_p)"),
        finding("heads.py", 30, 18, 38, "AG101", "`.item()` copies a device value to the host", "TopPSampler.forward",
                "cutoff = reached[0, 0].item() + 1 if reached.shape[0] > 0 else probs.shape[-1]"),
        finding("heads.py", 34, 20, 32, "AG101", "`.item()` copies a device value to the host", "TopPSampler.forward",
                "return int(token.item())"),
        finding("attention.py", 29, 13, 38, "AG901", "call to `apply_rotary` could not be resolved",
                "MultiHeadAttention.forward", "q = apply_rotary(q, cos, sin)"),
        finding("mlp.py", 42, 13, 31, "AG301", "Python `if` on a tensor value", "MoEFeedForward.forward",
                "if selected.any():"),
    ]
    site_block = WrapSite(PKG + "model.py", Span(28, 71, 28, 90), "paddle_lm.block.DecoderBlock",
                          "paddle_lm.model.DecoderLM", "self.blocks[*]", "LayerList")
    site_norm = WrapSite(PKG + "model.py", Span(32, 21, 32, 44), "paddle_lm.norm.RMSNorm",
                         "paddle_lm.model.DecoderLM", "self.norm")
    verdicts = {
        v.qualname: v
        for v in (
            Verdict("paddle_lm.model.DecoderLM", PKG + "model.py", 13, Status.INELIGIBLE, (
                Reason(("DecoderLM.forward", "lengths_to_mask"), "AG101", "`.item()` copies a device value to the host",
                       PKG + "ops.py", 31),
            )),
            Verdict("paddle_lm.block.DecoderBlock", PKG + "block.py", 8, Status.ELIGIBLE),
            Verdict("paddle_lm.norm.RMSNorm", PKG + "norm.py", 5, Status.ELIGIBLE),
            Verdict("paddle_lm.heads.TopPSampler", PKG + "heads.py", 16, Status.INELIGIBLE, (
                Reason(("TopPSampler.forward",), "AG201", "`nonzero`: output shape depends on the data",
                       PKG + "heads.py", 29),
                Reason(("TopPSampler.forward",), "AG101", "`.item()` copies a device value to the host",
                       PKG + "heads.py", 30),
            )),
            Verdict("paddle_lm.mlp.Opaque", PKG + "mlp.py", 8, Status.UNKNOWN, (
                Reason(("Opaque.forward",), "AG901", "call to an unresolved function", PKG + "mlp.py", 12),
            )),
        )
    }

    def node(qual: str, target: str, wrapped: bool, in_graph: bool, site: WrapSite | None = None, children: tuple[TreeNode, ...] = ()) -> TreeNode:
        return TreeNode(qual, target, wrapped, in_graph, site, children, verdict=verdicts.get(qual))

    linear = node("paddle.nn.Linear", "self.qkv", False, True)
    roots = (
        node("paddle_lm.model.DecoderLM", "", False, False, None, (
            node("paddle.nn.Embedding", "self.embed", False, False),
            node("paddle_lm.block.DecoderBlock", "self.blocks[*]", True, False, site_block, (
                node("paddle_lm.attention.MultiHeadAttention", "self.attn", False, True, None, (linear,)),
            )),
            node("paddle_lm.norm.RMSNorm", "self.norm", True, False, site_norm),
            node("paddle_lm.heads.TopPSampler", "self.sampler", False, False),
        )),
    )
    plan = Plan((site_block, site_norm), verdicts, roots, (Note("paddle_lm.model.DecoderLM", "DecoderLM is built by make_model: wrap it there"),))
    files = [PKG + name for name in ("attention.py", "block.py", "heads.py", "mlp.py", "model.py", "norm.py", "ops.py")]
    errors = [SourceError(PKG + "broken.py", "syntax error at line 3: invalid syntax")]
    return HandMade(findings, errors, plan, files)


@pytest.fixture
def analysis(monkeypatch: pytest.MonkeyPatch) -> HandMade:
    """The hand-made analysis, with the working directory at the repo root (reports use cwd-relative paths)."""
    monkeypatch.chdir(REPO)
    return hand_made()


@pytest.fixture(scope="session")
def chromium() -> str:
    path = ensure_chromium()
    if path is None:
        pytest.skip("chromium is not installed (CI installs Debian's package: CI=true, as root)")
    return path


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $AUTOGRAPH_CG_ARTIFACTS when set (kept by CI), else a pytest temp dir."""
    target = os.environ.get("AUTOGRAPH_CG_ARTIFACTS")
    if target:
        path = Path(target)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("artifacts")
