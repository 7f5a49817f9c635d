"""An analyzer bug met on one function, class or file is contained: reported in one line, the affected classes
end `unknown` with the reason, everything else is analyzed, and every command exits 2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.analysis.eligibility import Package
from autograph_cg.api import Options, analyze
from autograph_cg.cli import main
from autograph_cg.rules.dispatch import DISPATCH

BROKEN = """import torch
from torch import nn


class Broken(nn.Module):
    def forward(self, x):
        return x.reshape(2, -1)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Broken()

    def forward(self, x):
        return self.inner(x)
"""
FINE = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return self.block(x)
"""


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "broken.py").write_text(BROKEN)
    (root / "fine.py").write_text(FINE)
    return root


def _boom(*args: object) -> bool:
    raise KeyError("injected")


@pytest.fixture
def failing_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `reshape` rules raise when their guard runs: a stand-in for any bug inside a rule."""
    for table in (DISPATCH.ops, DISPATCH.op_methods):
        monkeypatch.setitem(table, "reshape", tuple(dataclasses.replace(r, guard=_boom) for r in table["reshape"]))


def test_a_failing_rule_leaves_its_class_unknown_and_the_rest_analyzed(pkg: Path, failing_rule: None) -> None:
    analysis = analyze(["pkg"], Options(use_cache=False, jobs=1))
    internal = [e for e in analysis.errors if e.internal]
    assert [(e.path, e.message.split(":")[0]) for e in internal] == [("pkg/broken.py", "internal error in Broken.forward")]
    assert "KeyError: 'injected'" in internal[0].message and "test_internal_errors" not in internal[0].message
    verdicts = {q.rsplit(".", 1)[-1]: v for q, v in analysis.plan.verdicts.items()}
    assert verdicts["Broken"].status.value == "unknown"
    assert [r.code for r in verdicts["Broken"].reasons] == ["internal-error"]
    assert verdicts["Outer"].status.value == "unknown"  # it runs the class the bug left unjudged
    assert verdicts["Block"].status.value == "eligible"
    assert verdicts["Holder"].status.value == "ineligible"
    assert [f.code for f in analysis.findings] == ["AG301"]  # the other file is still reported
    assert analysis.summary.internal_errors == 1 and analysis.summary.failed == 0


def test_every_command_exits_2_with_one_line_per_error(pkg: Path, failing_rule: None) -> None:
    runner = CliRunner()
    for command in (["lint", "pkg"], ["plan", "pkg"], ["lint", "pkg", "--format", "sarif"]):
        result = runner.invoke(main, [*command, "--no-cache"], catch_exceptions=False)
        assert result.exit_code == 2, (command, result.output)
        lines = [line for line in result.stderr.splitlines() if "internal error in" in line]
        assert lines == ["autograph-cg: error: pkg/broken.py: internal error in Broken.forward: KeyError: 'injected'"
                         + lines[0].split("'injected'")[1]]
        assert "Traceback" not in result.output
    result = runner.invoke(main, ["lint", "pkg", "--no-cache", "--format", "json"], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert [e["path"] for e in report["errors"]] == ["pkg/broken.py"] and report["summary"]["internal_errors"] == 1
    assert [f["code"] for f in report["findings"]] == ["AG301"]
    plan = json.loads(runner.invoke(main, ["plan", "pkg", "--no-cache", "--format", "json"]).stdout)
    broken = next(v for v in plan["verdicts"] if v["class"].endswith(".Broken"))
    assert broken["verdict"] == "unknown" and broken["reasons"][0]["code"] == "internal-error"


def test_a_bug_of_the_verdict_pass_leaves_one_class_unknown(pkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = Package._class_result

    def failing(self: Package, qual: str) -> object:
        if qual.endswith(".Block"):
            raise ValueError("verdict bug")
        return original(self, qual)

    monkeypatch.setattr(Package, "_class_result", failing)
    analysis = analyze(["pkg"], Options(use_cache=False, jobs=1))
    verdicts = {q.rsplit(".", 1)[-1]: v.status.value for q, v in analysis.plan.verdicts.items()}
    assert verdicts == {"Block": "unknown", "Holder": "ineligible", "Broken": "eligible", "Outer": "eligible"}
    assert [e.message.split(":")[0] for e in analysis.errors] == ["internal error in Block"]


def test_a_bug_of_the_rewriter_leaves_that_file_untouched(pkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autograph_cg.rewrite import api as rewrite_api

    (pkg / "more.py").write_text(FINE.replace("class Holder", "class Keeper").replace("if x.sum() > 0:\n            x = x * 2\n", ""))
    original = rewrite_api.wrap_sites

    def failing(module: object, sites: object, settings: object) -> object:
        if "Keeper" in module.text:  # type: ignore[attr-defined]
            raise AttributeError("rewriter bug")
        return original(module, sites, settings)

    monkeypatch.setattr(rewrite_api, "wrap_sites", failing)
    before = (pkg / "more.py").read_text()
    result = CliRunner().invoke(main, ["rewrite", "pkg", "--no-cache", "--jobs", "1"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert (pkg / "more.py").read_text() == before
    assert "CUDAGraphedLayer(Block())" in (pkg / "fine.py").read_text()  # the other file is still rewritten
    assert "internal-error" in result.output


def test_sublayers_nested_past_pythons_stack_end_unknown_and_the_rest_is_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of sublayers deeper than Python's stack allows: the classes whose chain does not fit end `unknown`
    (never eligible by an optimistic placeholder left behind), the rest are judged, and nothing is an error."""
    import contextlib
    import sys

    from autograph_cg import api

    depth = 160
    lines = ["import torch", "from torch import nn", ""]
    for i in range(depth):
        inner = f"C{i + 1}()" if i + 1 < depth else "nn.Linear(4, 4)"
        lines += [f"class C{i}(nn.Module):", "    def __init__(self):", "        super().__init__()", f"        self.inner = {inner}", "",
                  "    def forward(self, x):", "        return self.inner(x)", ""]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "chain.py").write_text("\n".join(lines))
    monkeypatch.setattr(api, "_stack_room", contextlib.nullcontext)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(700)
    try:
        analysis = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1))
    finally:
        sys.setrecursionlimit(limit)
    assert not analysis.errors
    statuses = [analysis.plan.verdicts[f"pkg.chain.C{i}"].status.value for i in range(depth)]
    assert statuses[0] == "unknown" and statuses[-1] == "eligible"
    cut = statuses.index("eligible")
    assert set(statuses[:cut]) == {"unknown"} and set(statuses[cut:]) == {"eligible"}, statuses
    assert "nested too deep to follow" in analysis.plan.verdicts["pkg.chain.C0"].reasons[0].message
