"""Analyzer bugs that `validate` found on real code (timm 1.0.31), reduced to a few lines each.

Each test states what the analyzer says now that the bug is fixed; the run-time half (the class
captures and matches eager) is checked beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograph_cg.api import Analysis, Options, analyze
from tests.validate.helpers import report, table

# timm's `checkpoint_seq` (timm/models/_manipulate.py:263) builds its segments with a closure over
# host ints `start` and `end`; every timm model whose forward_features can call it (ResNet,
# VisionTransformer, MlpMixer, ...) was ineligible for this one AG305. Host-looking names (`start`,
# `end`) now cover timm's spelling; the closure itself still loses the host kind of its call sites,
# as `lo`/`hi` show (a direct call with the same arguments is fine: `count`). What the closure calls,
# `functions[j]`, is resolved through the argument its call site passes.
SEGMENTS = '''
import torch
import torch.nn as nn


def run_segment(lo, hi, functions):
    def forward(x):
        for j in range(lo, hi + 1):
            x = functions[j](x)
        return x
    return forward


def count(lo, hi):
    total = 0
    for j in range(lo, hi + 1):
        total += j
    return total


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        return run_segment(0, len(self.layers) - 1, self.layers)(x) * count(0, 2)


def make():
    torch.manual_seed(0)
    return Stack(), (torch.randn(2, 4),)
'''


def test_closure_over_host_ints_is_not_a_tensor_loop(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, "tiny_segments", SEGMENTS)
    assert [f.code for f in analysis.findings] == []
    # `functions[j]` is an item of the `functions` argument every call passes: `self.layers`, Linears
    assert analysis.plan.verdicts["tiny_segments.Stack"].status.value == "eligible"


# timm's NormMlpClassifierHead (timm/layers/classifier.py:270) builds `self.pre_logits` this way; the
# analyzer takes the layer for an OrderedDict and calls the head unknown (AG902).
ORDERED = '''
from collections import OrderedDict

import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre_logits = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 4)), ("act", nn.Tanh())]))

    def forward(self, x):
        return self.pre_logits(x)


def make():
    torch.manual_seed(0)
    return Head(), (torch.randn(2, 4),)
'''


def test_sequential_of_an_ordered_dict_is_a_sequential(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, "tiny_ordered", ORDERED)
    assert analysis.plan.verdicts["tiny_ordered.Head"].status.value == "eligible"



@pytest.mark.parametrize(("module", "source", "cls"), [("tiny_segments", SEGMENTS, "Stack"), ("tiny_ordered", ORDERED, "Head")])
def test_each_case_captures_fine(tmp_path: Path, module: str, source: str, cls: str) -> None:
    """The run-time half: a missed opportunity until the analyzer is fixed."""
    pytest.importorskip("torch")
    (tmp_path / f"{module}.py").write_text(source)
    code, data = report(f"{module}:make", "--path", str(tmp_path))
    assert code == 0
    assert table(data)[f"{module}.{cls}"][1] == "captured"


def _analyze(folder: Path, module: str, source: str) -> Analysis:
    path = folder / f"{module}.py"
    path.write_text(source)
    return analyze([str(path)], Options(use_cache=False, jobs=1))
