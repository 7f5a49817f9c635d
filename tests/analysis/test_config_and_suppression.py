"""pyproject configuration, suppression comments, and the cache giving the same answer as a cold run."""

from __future__ import annotations

import json

from click.testing import CliRunner

from autograph_cg.analysis import index
from autograph_cg.analysis.index import index_source
from autograph_cg.api import Options, analyze
from autograph_cg.cli import main
from tests.analysis.test_cli_inputs import LAYER

TWO = LAYER.replace("return x.sum().item()", "y = x.nonzero()\n        return y.sum().item()")


def codes(path, *args):
    result = CliRunner().invoke(main, ["lint", str(path), "--format", "json", "--no-cache", *args])
    return [f["code"] for f in json.loads(result.stdout)["findings"]], result


def test_pyproject_section_is_read_and_flags_win(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.autograph-cg]\nignore = ["AG201"]\nselct = ["AG1"]\n')
    (tmp_path / "m.py").write_text(TWO)
    found, result = codes(tmp_path)
    assert found == ["AG101"]
    assert "unknown key 'selct'" in result.stderr and "did you mean 'select'" in result.stderr
    found, _ = codes(tmp_path, "--select", "AG2", "--config", str(tmp_path / "pyproject.toml"))
    assert found == []  # ignore from the file still applies to the selection from the flag


def test_bad_config_value_is_a_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.autograph-cg]\nunknown = "maybe"\n')
    (tmp_path / "m.py").write_text(TWO)
    result = CliRunner().invoke(main, ["lint", str(tmp_path), "--no-cache"])
    assert result.exit_code == 2 and "unknown = 'maybe'" in result.output


def test_ignore_comments(tmp_path):
    text = TWO.replace("y = x.nonzero()", "y = x.nonzero()  # autograph-cg: ignore[AG201]")
    text = text.replace("return y.sum().item()", "# autograph-cg: ignore\n        return y.sum().item()")
    (tmp_path / "m.py").write_text(text)
    assert codes(tmp_path)[0] == []
    (tmp_path / "m.py").write_text(TWO.replace("y = x.nonzero()", "y = x.nonzero()  # autograph-cg: ignore[AG101]"))
    assert sorted(codes(tmp_path)[0]) == ["AG101", "AG201"]


def test_an_ignore_comment_keeps_what_is_recorded_per_finding_with_its_finding(tmp_path):
    """A finding suppressed before others leaves what the walk recorded for each of the others (the refresh a write
    sits in, the conditions it sits under) with that finding, not with the one now in its place."""
    text = (
        "import paddle.nn as nn\n\n\nclass Head(nn.Layer):\n    def forward(self, x):\n"
        "        self.first = 1  # autograph-cg: ignore[AG401]\n"
        "        if x.shape[0] > self.size:\n            self.size = x.shape[0]\n"
        "        self.last = x\n        return x\n"
    )
    (tmp_path / "m.py").write_text(text)
    result = CliRunner().invoke(main, ["lint", str(tmp_path), "--format", "json", "--no-cache"])
    found = {f["line"]: f.get("refresh") for f in json.loads(result.stdout)["findings"]}
    assert found == {8: "x.shape[0] > self.size", 9: None}


def test_skip_comment_on_a_class_hides_its_findings_and_blocks_its_parent(tmp_path):
    text = LAYER.replace("class Head(nn.Layer):", "class Head(nn.Layer):  # autograph-cg: skip")
    text += "\n\nclass Net(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.head = Head()\n\n    def forward(self, x):\n        return self.head(x)\n"
    (tmp_path / "m.py").write_text(text)
    assert codes(tmp_path)[0] == []
    plan = CliRunner().invoke(main, ["plan", str(tmp_path), "--format", "json", "--no-cache"])
    verdicts = {v["class"].rsplit(".", 1)[1]: v["verdict"] for v in json.loads(plan.stdout)["verdicts"]}
    assert verdicts == {"Head": "skipped", "Net": "ineligible"}
    assert json.loads(plan.stdout)["sites"] == []


def test_warm_cache_gives_the_cold_answer_and_sees_changes(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(TWO)
    options = Options(cache_dir=str(tmp_path / "cache"))
    cold = analyze([str(src)], options)
    warm = analyze([str(src)], options)
    assert sorted(f.code for f in cold.findings) == ["AG101", "AG201"]
    assert (tmp_path / "cache" / ".gitignore").read_text().endswith("*\n")  # never committed by accident
    assert warm.findings == cold.findings and warm.plan == cold.plan
    (src / "m.py").write_text(LAYER)
    changed = analyze([str(src)], options)
    assert [f.code for f in changed.findings] == ["AG101"]


def test_lint_makes_no_plan_but_reports_what_a_planned_run_reports(tmp_path, monkeypatch):
    from autograph_cg.analysis import plan

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(TWO)
    planned = analyze([str(src)], Options(use_cache=False))
    monkeypatch.setattr(plan, "make_plan", lambda *a, **k: (_ for _ in ()).throw(AssertionError("lint planned")))
    bare = analyze([str(src)], Options(use_cache=False, plan=False))
    assert bare.plan is None and bare.summary.sites is None and planned.summary.sites is not None
    assert bare.findings == planned.findings and bare.summary.verdicts == planned.summary.verdicts
    result = CliRunner().invoke(main, ["lint", str(src), "--format", "json", "--no-cache"])
    assert json.loads(result.stdout)["summary"]["sites"] is None


def test_lint_is_served_by_a_planned_answer_but_plan_never_by_lint(tmp_path, monkeypatch):
    from autograph_cg.analysis.eligibility import Package

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(TWO)
    linted = analyze([str(src)], Options(cache_dir=str(tmp_path / "first-lint"), plan=False))
    planned = analyze([str(src)], Options(cache_dir=str(tmp_path / "first-lint")))
    assert linted.plan is None and planned.plan is not None  # lint's answer has no plan to give
    cache = str(tmp_path / "first-plan")
    analyze([str(src)], Options(cache_dir=cache))
    monkeypatch.setattr(Package, "compute_all", lambda self: (_ for _ in ()).throw(AssertionError("analyzed again")))
    again = analyze([str(src)], Options(cache_dir=cache, plan=False))
    assert again.plan == planned.plan and again.findings == planned.findings


def test_a_damaged_cache_entry_is_indexed_afresh(tmp_path):
    import pickle

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(TWO)
    cache = tmp_path / "cache"
    analyze([str(src)], Options(cache_dir=str(cache)))
    (facts,) = cache.glob("facts-*.pickle")  # the package's
    entries = pickle.loads(facts.read_bytes())
    assert entries and all(isinstance(blob, bytes) for _, blob, _ in entries.values())  # stored pickled, read on demand
    facts.write_bytes(pickle.dumps({key: (stamp, blob[: len(blob) // 2], complete) for key, (stamp, blob, complete) in entries.items()}))
    for stale in cache.glob("results-*.pickle"):
        stale.unlink()
    again = analyze([str(src)], Options(cache_dir=str(cache)))
    assert sorted(f.code for f in again.findings) == ["AG101", "AG201"]


def test_a_cache_of_another_build_is_never_read_and_is_removed(tmp_path, monkeypatch):
    """An upgrade in place keeps the version number: the caches are keyed by the tool's own source too."""
    from autograph_cg.analysis import runner

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(TWO)
    cache = tmp_path / "cache"
    options = Options(cache_dir=str(cache))
    analyze([str(src)], options)
    written = sorted(p.name.split("-", 1)[0] for p in cache.glob("*.pickle"))
    assert written == ["facts", "results", "solved"] and all(runner.BUILD in p.name for p in cache.glob("*.pickle"))
    # another build: the same files and settings, but this build's answers must not be served to it
    monkeypatch.setattr(runner, "BUILD", "otherbuild")
    hits = []
    monkeypatch.setattr(index, "index_source", lambda *a, **k: hits.append(a[0]) or index_source(*a, **k))
    again = analyze([str(src)], Options(cache_dir=str(cache), jobs=1))
    assert sorted(f.code for f in again.findings) == ["AG101", "AG201"] and hits  # indexed afresh, not read
    assert sorted(p.name.split("-", 1)[0] for p in cache.glob("*.pickle")) == ["facts", "results", "solved"]
    assert all("otherbuild" in p.name for p in cache.glob("*.pickle"))


def test_unknown_calls_are_reported_only_when_selected_but_always_shape_the_verdict(tmp_path):
    text = "import paddle.nn as nn\n\n\nclass M(nn.Layer):\n    def __init__(self, fn):\n        super().__init__()\n        self.fn = fn\n\n    def forward(self, x):\n        return self.fn(x)\n"
    (tmp_path / "m.py").write_text(text)
    assert codes(tmp_path)[0] == []
    assert codes(tmp_path, "--select", "AG9")[0] == ["AG901"]
    for mode, verdict in (("unknown", "unknown"), ("block", "ineligible"), ("allow", "eligible")):
        plan = CliRunner().invoke(main, ["plan", str(tmp_path), "--format", "json", "--no-cache", "--unknown", mode])
        assert [v["verdict"] for v in json.loads(plan.stdout)["verdicts"]] == [verdict]


def test_helpers_in_files_without_forward_are_analyzed_when_reached(tmp_path):
    """utils.py has no forward, so its bodies are walked only once a forward reaches it; the answer is the same."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("def peak(x):\n    return x.max().item()\n\n\ndef unused(x):\n    return x.numpy()\n")
    (pkg / "net.py").write_text(
        "import torch\nfrom .utils import peak\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x / peak(x)\n"
    )
    for cache in (None, str(tmp_path / "cache"), str(tmp_path / "cache")):
        analysis = analyze([str(pkg)], Options(use_cache=cache is not None, cache_dir=cache))
        assert [(f.path.rsplit("/", 1)[1], f.line, f.code) for f in analysis.findings] == [("utils.py", 2, "AG101")]
        assert analysis.plan.verdicts["pkg.net.Net"].status.value == "ineligible"


def test_a_method_only_another_file_reaches_is_walked_when_reached(tmp_path):
    """helper.py has a forward, but `peak` is not reached from it: walked only once net.py's forward calls it."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(
        "import torch\n\n\nclass Helper(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "    def peak(self, x):\n        return x.max().item()\n\n    def unused(self, x):\n        return x.numpy()\n"
    )
    (pkg / "net.py").write_text(
        "import torch\nfrom .helper import Helper\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.h = Helper()\n\n    def forward(self, x):\n        return x / self.h.peak(x)\n"
    )
    analysis = analyze([str(pkg)], Options(use_cache=False))
    assert [(f.path.rsplit("/", 1)[1], f.line, f.code) for f in analysis.findings] == [("helper.py", 9, "AG101")]
    assert {q.rsplit(".", 1)[1]: v.status.value for q, v in analysis.plan.verdicts.items()} == {"Helper": "eligible", "Net": "ineligible"}


def test_helpers_called_with_host_values_are_reached_and_their_parameters_are_host(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch\n\n\n"
        "def upload(n):\n    return torch.tensor(list(range(n)))\n\n\n"
        "def repeat(fn, times):\n    def run(x):\n        for _ in range(times):\n            x = fn(x)\n        return x\n    return run\n\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        x = repeat(torch.relu, 2)(x)\n        return x + upload(x.shape[0])\n"
    )
    analysis = analyze([str(tmp_path)], Options(use_cache=False))
    # `upload` gets only a host size, yet runs in forward: its upload is reported; `times` is a host int, so no AG305
    assert [(f.line, f.code) for f in analysis.findings] == [(5, "AG108")]


def test_an_ignored_rule_neither_reports_nor_blocks_through_a_framework_layer_or_a_value(tmp_path):
    """A framework layer with a known hazard (Paddle's `Dropout2D` draws its mask on the host) and a framework
    function held as a value (`self.op = paddle.nonzero`) block their parent by a rule, like a finding in its forward:
    a rule the configuration ignores does neither there either."""
    (tmp_path / "m.py").write_text(
        "import paddle\nfrom paddle import nn\n\n\n"
        "class Drop(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout2D(0.1)\n\n"
        "    def forward(self, x):\n        return self.drop(x)\n\n\n"
        "class Held(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.op = paddle.nonzero\n\n"
        "    def forward(self, x):\n        return self.op(x)\n"
    )

    def verdicts(*args):
        plan = CliRunner().invoke(main, ["plan", str(tmp_path), "--format", "json", "--no-cache", *args])
        return {v["class"].rsplit(".", 1)[1]: v["verdict"] for v in json.loads(plan.stdout)["verdicts"]}

    assert verdicts() == {"Drop": "ineligible", "Held": "ineligible"}
    (tmp_path / "pyproject.toml").write_text('[tool.autograph-cg]\nignore = ["AG404", "AG201"]\n')
    assert verdicts("--config", str(tmp_path / "pyproject.toml")) == {"Drop": "eligible", "Held": "eligible"}
