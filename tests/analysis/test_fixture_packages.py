"""The bundled fixture packages: exact findings and plan, and agreement with their hand-written HAZARDS.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.cli import main

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("paddle_lm", "torch_lm")


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--no-cache", "-q", "--no-color"])
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("AUTOGRAPH_CG_MIN_KERNELS")  # the fixtures are planned as users get them: with the cost model


@pytest.mark.parametrize("package", PACKAGES)
def test_lint_output_is_exactly_the_expected_file(package):
    code, out = _run("lint", f"fixtures/{package}")
    assert code == 1
    assert out == (ROOT / "fixtures" / "expected" / f"{package}.lint.txt").read_text()


@pytest.mark.parametrize("package", PACKAGES)
def test_plan_is_exactly_the_expected_file(package):
    code, out = _run("plan", f"fixtures/{package}", "--format", "json")
    assert code == 0
    assert json.loads(out) == json.loads((ROOT / "fixtures" / "expected" / f"{package}.plan.json").read_text())


def _hazards(package: str) -> tuple[set[tuple[str, int, str]], dict[str, str]]:
    text = (ROOT / "fixtures" / package / "HAZARDS.md").read_text()
    hazards = {(m[1], int(m[2]), m[3]) for m in re.finditer(r"^\| `([\w/]+\.py):(\d+)` \| (AG\d{3}) \|", text, re.M)}
    verdicts = dict(re.findall(r"^\| `(\w+)` \| (eligible|ineligible|unknown) \|", text, re.M))
    return hazards, verdicts


@pytest.mark.parametrize("package", PACKAGES)
def test_findings_are_the_planted_hazards(package):
    expected, _ = _hazards(package)
    code, out = _run("lint", f"fixtures/{package}", "--format", "json")
    found = {(f["path"].split(f"{package}/", 1)[1], f["line"], f["code"]) for f in json.loads(out)["findings"]}
    assert expected and found == expected


@pytest.mark.parametrize("package", PACKAGES)
def test_verdicts_are_the_expected_ones(package):
    _, expected = _hazards(package)
    code, out = _run("plan", f"fixtures/{package}", "--format", "json")
    found = {v["class"].rsplit(".", 1)[1]: v["verdict"] for v in json.loads(out)["verdicts"]}
    assert expected and found == expected


def test_plan_wraps_the_largest_eligible_layers_never_nested():
    code, out = _run("plan", "fixtures/paddle_lm", "--format", "json", "--min-kernels", "0")
    plan = json.loads(out)
    wrapped = {(s["owner"].rsplit(".", 1)[1], s["target"], s["class"].rsplit(".", 1)[1]) for s in plan["sites"]}
    assert ("DecoderLM", "self.blocks[*]", "DecoderBlock") in wrapped  # the eligible branch of the comprehension
    assert not any(cls == "MoEDecoderBlock" for _, _, cls in wrapped)
    assert ("MoEFeedForward", "self.experts[*]", "GatedMLP") in wrapped
    assert ("DecoderLM", "self.embed_proj", "Sequential") in wrapped  # a stack of framework layers, whole
    # DecoderBlock is wrapped whole, so nothing it builds is wrapped again.
    assert not any(owner == "DecoderBlock" for owner, _, _ in wrapped)


def test_a_sequential_is_wrapped_whole_only_when_every_item_is_capturable(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Clean(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "class Sync(nn.Module):\n    def forward(self, x):\n        return x / x.max().item()\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.good = nn.Sequential(nn.Linear(4, 4), Clean())\n"
        "        self.bad = nn.Sequential(Clean(), Sync())\n\n"
        "    def forward(self, x):\n        return self.bad(self.good(x))\n"
    )
    code, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "0")
    wrapped = sorted((s["target"], s["class"].rsplit(".", 1)[1]) for s in json.loads(out)["sites"])
    assert wrapped == [("self.bad[*]", "Clean"), ("self.good", "Sequential")]


def test_by_default_the_plan_wraps_only_sites_that_pay_and_lists_the_rest():
    code, out = _run("plan", "fixtures/paddle_lm", "--format", "json")
    plan = json.loads(out)
    assert plan["min_kernels"] == 10
    assert [(s["target"], s["class"].rsplit(".", 1)[1]) for s in plan["sites"]] == [("self.blocks[*]", "DecoderBlock")]
    assert plan["sites"][0]["kernels"] >= 10
    skipped = {(s["target"], s["class"].rsplit(".", 1)[1]): s for s in plan["skipped"]}
    assert set(skipped) == {
        ("self.experts[*]", "GatedMLP"), ("self.embed", "TokenEmbedding"), ("self.embed_proj", "Sequential"),
        ("self.norm", "RMSNorm"), ("self.head", "LMHead"),
    }
    assert all(0 < s["kernels"] < 10 and "min-kernels = 10" in s["reason"] for s in skipped.values())
    _, text = _run("plan", "fixtures/paddle_lm")
    assert "Left unwrapped, too small to pay for a wrapper (5)" in text and "self.head: LMHead: about 1 kernel per call" in text


def test_a_layer_built_in_a_function_that_two_classes_call_is_one_site(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class Clean(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "def stack(n):\n    return nn.ModuleList([Clean() for _ in range(n)])\n\n\n"
        "class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = stack(2)\n\n"
        "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x.tolist()\n\n\n"
        "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = stack(3)\n\n"
        "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x.tolist()\n"
    )
    _, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "0")
    sites = json.loads(out)["sites"]
    assert [(s["target"], s["class"].rsplit(".", 1)[1], s["existing"]) for s in sites] == [("return[*]", "Clean", False)]
    assert _run("rewrite", str(tmp_path), "--min-kernels", "0")[0] == 0
    _, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "0")
    assert [(s["target"], s["existing"]) for s in json.loads(out)["sites"]] == [("return[*]", True)]


def test_a_sites_estimate_is_of_what_the_default_build_makes_there(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class Small(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "class Big(nn.Module):\n    def forward(self, x):\n"
        "        return (((((x * 2 + 1) * 3 - 4) / 5 + 6) * 7 - 8) / 9 + 10) * 11 - 12\n\n\n"
        "def make_stage(block_fn, n):\n    return nn.Sequential(*[block_fn() for _ in range(n)])\n\n\n"
        "class Net(nn.Module):\n    def __init__(self, block=Big):\n        super().__init__()\n"
        "        self.stage = make_stage(block, 2)\n\n"
        "    def forward(self, x):\n        return self.stage(x).tolist()\n\n\n"
        "class TinyNet(Net):\n    def __init__(self):\n        super().__init__(block=Small)\n"
    )
    _, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "10")
    plan = json.loads(out)
    sites = [(s["target"], s["class"].rsplit(".", 1)[1], s["kernels"]) for s in plan["sites"]]
    assert sites == [("return", "Sequential", plan_kernels(plan, "m.Big"))], sites  # one item site: counted once
    assert plan_kernels(plan, "m.Big") >= 10 > plan_kernels(plan, "m.Small")


def plan_kernels(plan: dict, qual: str) -> int:
    return next(v["kernels"] for v in plan["verdicts"] if v["class"].endswith(qual))


def test_a_sequential_of_stages_that_a_builder_object_makes_is_wrapped_whole(tmp_path):
    """timm's EfficientNet: `self.blocks = nn.Sequential(*builder(...))`, each stage an `nn.Sequential(*blocks)`."""
    builder = (
        "class Builder:\n    def _make(self, kind):\n        return {block}()\n\n"
        "    def __call__(self, stages):\n        out = []\n        for kinds in stages:\n            blocks = []\n"
        "            for kind in kinds:\n                blocks.append(self._make(kind))\n"
        "            out.append(nn.Sequential(*blocks))\n        return out\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.blocks = nn.Sequential(*Builder()([['a', 'b'], ['c']]))\n\n"
        "    def forward(self, x):\n        return self.blocks(x).tolist()\n"
    )
    layers = (
        "import torch.nn as nn\n\n\n"
        "class Clean(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "class Syncs(nn.Module):\n    def forward(self, x):\n        return x * x.sum().item()\n\n\n"
    )
    (tmp_path / "m.py").write_text(layers + builder.format(block="Clean"))
    _, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "0")
    assert [(s["target"], s["class"]) for s in json.loads(out)["sites"]] == [("self.blocks", "torch.nn.Sequential")]
    (tmp_path / "m.py").write_text(layers + builder.format(block="Syncs"))  # one stage's block cannot be captured
    _, out = _run("plan", str(tmp_path), "--format", "json", "--min-kernels", "0")
    assert json.loads(out)["sites"] == []
